// Package scaffold generates a model workspace (<llms>/<name>/): the weight
// loader, the CPU helpers production imports, TODO.md and the progress docs.
// Files are rendered from embedded templates and written so that a re-run
// never destroys a file somebody edited by hand.
package scaffold

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"phase0/model"
)

// Spec is everything the templates need: the model's one Config (as
// model.Analyze extracted and validated it) and the family that decided it,
// plus what names the workspace. Nothing here is read from disk.
type Spec struct {
	model.Config
	Family model.Family

	Name        string // workspace and module prefix, e.g. "qwen3_0_6b"
	ModelID     string // HF repo id, e.g. "Qwen/Qwen3-0.6B"
	Revision    string // commit the config was resolved at; empty when unknown
	ToolVersion string

	// AttentionFallback keeps attention_reference and softmax in the CPU
	// helpers, for a prefill with a cpu_attn=True fallback.
	AttentionFallback bool
}

// ErrInvalidSpec is wrapped by every Spec validation error.
var ErrInvalidSpec = errors.New("invalid scaffold spec")

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

// validate checks what ends up inside generated Python and Markdown. The
// numbers were validated once, by model.Config.Validate, when they were
// extracted; a Spec built around an unvalidated Config is refused here by
// the same function rather than a second copy of its rules.
func (s Spec) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidSpec, s.ModelID, fmt.Sprintf(format, args...))
	}
	if !nameRE.MatchString(s.Name) {
		return bad("name %q is not a valid Python identifier (want lower-case letters, digits and _; pass --name)", s.Name)
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
	if s.Family == nil {
		return bad("no model family")
	}
	if err := s.Config.Validate(); err != nil {
		return bad("%s: %v", s.Family.Name(), err)
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
