// Package scaffold generates a model workspace (<llms>/<name>/): the weight
// loader, the CPU helpers production imports, TODO.md and the progress docs.
// Files are rendered from embedded templates and written so that a re-run
// never destroys a file somebody edited by hand.
package scaffold

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode"
)

// Spec is everything the templates need to know about one model. The lead
// fills it from the resolved config.json; nothing here is read from disk.
type Spec struct {
	Name     string `json:"name"`     // workspace and module prefix, e.g. "qwen3_0_6b"
	ModelID  string `json:"model_id"` // HF repo id, e.g. "Qwen/Qwen3-0.6B"
	Revision string `json:"revision"` // commit the config was resolved at; empty when unknown
	Family   string `json:"family"`   // "llama", "mistral", "qwen2" or "qwen3"

	NLayers   int `json:"n_layers"`
	EmbDim    int `json:"emb_dim"`
	NHeads    int `json:"n_heads"`
	NKVHeads  int `json:"n_kv_heads"`
	HeadDim   int `json:"head_dim"`
	HiddenDim int `json:"hidden_dim"`
	VocabSize int `json:"vocab_size"`

	RopeBase   float64 `json:"rope_base"`
	RMSNormEps float64 `json:"rms_norm_eps"`

	TieWordEmbeddings bool `json:"tie_word_embeddings"`
	QKVBias           bool `json:"qkv_bias"`
	QKNorm            bool `json:"qk_norm"`

	// RopeScaling is nil for the default (unscaled) RoPE.
	RopeScaling *RopeScaling `json:"rope_scaling,omitempty"`

	// AttentionFallback keeps attention_reference and softmax in the CPU
	// helpers, for a prefill with a cpu_attn=True fallback.
	AttentionFallback bool `json:"attention_fallback"`

	ToolVersion string `json:"tool_version"`
}

// RopeScaling mirrors config.json's rope_scaling (or rope_parameters) for
// the two scaling types the generated generate_rope_lut implements.
type RopeScaling struct {
	Type                          string  `json:"type"` // "llama3" or "linear"
	Factor                        float64 `json:"factor"`
	LowFreqFactor                 float64 `json:"low_freq_factor,omitempty"`
	HighFreqFactor                float64 `json:"high_freq_factor,omitempty"`
	OriginalMaxPositionEmbeddings int     `json:"original_max_position_embeddings,omitempty"`
}

// ErrInvalidSpec is wrapped by every Spec validation error.
var ErrInvalidSpec = errors.New("invalid scaffold spec")

var families = []string{"llama", "mistral", "qwen2", "qwen3"}

// A workspace name becomes a directory and a Python module prefix, so it
// must be a valid Python identifier.
var nameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// DeriveName turns a HF model id into a workspace name: the last path
// element, lower-cased, runs of non-alphanumerics replaced by one "_",
// leading and trailing "_" trimmed ("Qwen/Qwen3-0.6B" -> "qwen3_0_6b").
// A name that would start with a digit gets a "model_" prefix, because the
// name doubles as a Python module prefix.
func DeriveName(modelID string) string {
	last := modelID
	if i := strings.LastIndex(strings.TrimRight(modelID, "/"), "/"); i >= 0 {
		last = modelID[i+1:]
	}
	var b strings.Builder
	underscore := false
	for _, r := range strings.ToLower(last) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
			underscore = false
			continue
		}
		if !underscore {
			b.WriteByte('_')
			underscore = true
		}
	}
	name := strings.Trim(b.String(), "_")
	if name != "" && name[0] >= '0' && name[0] <= '9' {
		name = "model_" + name
	}
	return name
}

// HelpersKept lists the functions the generated <name>_cpu_helpers.py
// defines for this spec, in file order.
func HelpersKept(s Spec) []string {
	kept := []string{"rms_norm"}
	if s.QKNorm {
		kept = append(kept, "qk_norm_per_head")
	}
	if s.AttentionFallback {
		kept = append(kept, "softmax", "attention_reference")
	}
	return kept
}

func (s Spec) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidSpec, s.ModelID, fmt.Sprintf(format, args...))
	}
	if !nameRE.MatchString(s.Name) {
		return bad("name %q is not a valid Python identifier (want lower-case letters, digits and _)", s.Name)
	}
	if err := checkText("model_id", s.ModelID, true); err != nil {
		return bad("%v", err)
	}
	if err := checkText("revision", s.Revision, false); err != nil {
		return bad("%v", err)
	}
	if err := checkText("tool_version", s.ToolVersion, false); err != nil {
		return bad("%v", err)
	}
	known := false
	for _, f := range families {
		known = known || f == s.Family
	}
	if !known {
		return bad("family %q is not one of %s", s.Family, strings.Join(families, ", "))
	}
	for _, d := range []struct {
		field string
		v     int
	}{
		{"n_layers", s.NLayers}, {"emb_dim", s.EmbDim}, {"n_heads", s.NHeads}, {"n_kv_heads", s.NKVHeads},
		{"head_dim", s.HeadDim}, {"hidden_dim", s.HiddenDim}, {"vocab_size", s.VocabSize},
	} {
		if d.v <= 0 {
			return bad("%s is %d, want a positive integer", d.field, d.v)
		}
	}
	if s.NHeads%s.NKVHeads != 0 {
		return bad("n_heads %d is not a multiple of n_kv_heads %d", s.NHeads, s.NKVHeads)
	}
	if s.HeadDim%2 != 0 {
		return bad("head_dim %d is odd; RoPE rotates pairs", s.HeadDim)
	}
	if !(s.RopeBase > 0) || math.IsInf(s.RopeBase, 0) {
		return bad("rope_base %v, want a positive finite number", s.RopeBase)
	}
	if !(s.RMSNormEps > 0) || s.RMSNormEps >= 1 {
		return bad("rms_norm_eps %v, want a number in (0, 1)", s.RMSNormEps)
	}
	if rs := s.RopeScaling; rs != nil {
		if !(rs.Factor > 0) || math.IsInf(rs.Factor, 0) {
			return bad("rope_scaling.factor %v, want a positive finite number", rs.Factor)
		}
		switch rs.Type {
		case "linear":
		case "llama3":
			if !(rs.LowFreqFactor > 0) || !(rs.HighFreqFactor > rs.LowFreqFactor) {
				return bad("rope_scaling llama3 needs 0 < low_freq_factor < high_freq_factor, got %v and %v",
					rs.LowFreqFactor, rs.HighFreqFactor)
			}
			if rs.OriginalMaxPositionEmbeddings <= 0 {
				return bad("rope_scaling llama3 needs original_max_position_embeddings > 0, got %d",
					rs.OriginalMaxPositionEmbeddings)
			}
		default:
			return bad("rope_scaling type %q is not supported (supported: llama3, linear)", rs.Type)
		}
	}
	return nil
}

// checkText keeps strings that end up inside generated Python and Markdown
// on one printable line.
func checkText(field, v string, required bool) error {
	if required && v == "" {
		return fmt.Errorf("%s is empty", field)
	}
	for _, r := range v {
		if !unicode.IsPrint(r) || r == '`' || r == '"' || r == '\\' {
			return fmt.Errorf("%s %q contains %q, which is not allowed", field, v, r)
		}
	}
	return nil
}
