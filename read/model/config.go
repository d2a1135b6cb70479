// Package model reads a checkpoint's config.json into the one model.Config,
// one file per family behind model.Family (how its config.json reads and
// which tensors exist), and holds the architecture gate: what the NPU
// pipeline cannot run is REJECTED with its reasons.
package model

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// RopeScaling is a supported RoPE frequency scaling. nil in Config means plain RoPE.
type RopeScaling struct {
	RopeType                      string  `json:"rope_type"`
	Factor                        float64 `json:"factor"`
	LowFreqFactor                 float64 `json:"low_freq_factor,omitempty"`
	HighFreqFactor                float64 `json:"high_freq_factor,omitempty"`
	OriginalMaxPositionEmbeddings int     `json:"original_max_position_embeddings,omitempty"`
}

// Config is the Phase-0 view of config.json, with upstream's field names.
type Config struct {
	NLayers           int          `json:"n_layers"`
	EmbDim            int          `json:"emb_dim"`
	NHeads            int          `json:"n_heads"`
	NKVHeads          int          `json:"n_kv_heads"`
	HeadDim           int          `json:"head_dim"`
	HiddenDim         int          `json:"hidden_dim"`
	VocabSize         int          `json:"vocab_size"`
	RopeBase          float64      `json:"rope_base"`
	TieWordEmbeddings bool         `json:"tie_word_embeddings"`
	RMSNormEps        float64      `json:"rms_norm_eps"`
	QKVBias           bool         `json:"qkv_bias"`
	QKNorm            bool         `json:"qk_norm"`
	RopeScaling       *RopeScaling `json:"rope_scaling"`
	HiddenAct         string       `json:"hidden_act"`
	// DType is torch_dtype (transformers 4) or dtype (transformers 5), "" when absent.
	DType string `json:"dtype"`
}

// Defaulted records a Config field that config.json did not give explicitly.
type Defaulted struct {
	Field  string `json:"field"`
	Key    string `json:"key"`
	Value  any    `json:"value"`
	Source string `json:"source"`
}

// Analysis is everything decided from config.json alone.
type Analysis struct {
	Architecture string
	ModelType    string
	Family       Family // nil when the architecture is not supported
	Config       *Config
	Defaulted    []Defaulted
	Rejections   []Rejection
	Warnings     []string
	// Deployed is a deployed family's own settings (AnalyzeDeployed): nil
	// for the supported families.
	Deployed *Deployed
}

// Rejected reports whether the model must not be taken further.
func (a *Analysis) Rejected() bool { return len(a.Rejections) > 0 }

// Analyze runs the architecture gate and, when it passes, extracts and
// validates the Phase-0 config.
func Analyze(r *Raw) *Analysis {
	a := &Analysis{}
	a.ModelType, _, _ = r.String("model_type")
	a.Rejections = gate(r, a)
	if a.Rejected() {
		return a
	}
	cfg, err := a.extract(r)
	if err != nil {
		a.Rejections = append(a.Rejections, Rejection{Code: CodeInvalidConfig, Message: err.Error()})
		return a
	}
	if err := cfg.Validate(); err != nil {
		a.Rejections = append(a.Rejections, Rejection{Code: CodeInvalidConfig, Message: fmt.Sprintf("%s: %v", a.Family.Name(), err)})
		return a
	}
	a.Config = cfg
	return a
}

func (a *Analysis) defaulted(field, key string, value any, source string) {
	a.Defaulted = append(a.Defaulted, Defaulted{Field: field, Key: key, Value: value, Source: source})
}

func requireInt(r *Raw, key string) (int, error) {
	v, ok, err := r.Int(key)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("config.json: required key %s is missing", key)
	}
	return v, nil
}

func (a *Analysis) extract(r *Raw) (*Config, error) {
	fam := a.Family
	def := fam.Defaults()
	c := &Config{QKNorm: fam.QKNorm()}
	var err error
	for _, f := range []struct {
		dst *int
		key string
	}{
		{&c.NLayers, "num_hidden_layers"},
		{&c.EmbDim, "hidden_size"},
		{&c.NHeads, "num_attention_heads"},
		{&c.HiddenDim, "intermediate_size"},
		{&c.VocabSize, "vocab_size"},
	} {
		if *f.dst, err = requireInt(r, f.key); err != nil {
			return nil, err
		}
	}

	if err := a.extractHeads(r, c, def); err != nil {
		return nil, err
	}
	if err := a.extractRope(r, c, def); err != nil {
		return nil, err
	}

	if err := a.extractDefaulted(r, c, def); err != nil {
		return nil, err
	}
	for _, key := range []string{"dtype", "torch_dtype"} {
		if v, ok, err := r.String(key); err == nil && ok {
			c.DType = v
			break
		}
	}
	return c, nil
}

// extractHeads reads the attention's KV heads and head size, each from
// config.json, else what transformers assumes.
func (a *Analysis) extractHeads(r *Raw, c *Config, def ClassDefaults) error {
	fam := a.Family
	kv, ok, err := r.Int("num_key_value_heads")
	if err != nil {
		return err
	}
	if ok {
		c.NKVHeads = kv
	} else {
		c.NKVHeads = c.NHeads
		a.defaulted("n_kv_heads", "num_key_value_heads", c.NHeads, "n_heads (multi-head attention)")
	}

	hd, ok, err := r.Int("head_dim")
	if err != nil {
		return err
	}
	switch {
	case ok:
		c.HeadDim = hd
	case def.HeadDim > 0:
		c.HeadDim = def.HeadDim
		a.defaulted("head_dim", "head_dim", def.HeadDim, fam.Architecture()+" class default")
	default:
		if c.NHeads <= 0 || c.EmbDim%c.NHeads != 0 {
			return fmt.Errorf("config.json: head_dim is absent and hidden_size %d is not divisible by num_attention_heads %d", c.EmbDim, c.NHeads)
		}
		c.HeadDim = c.EmbDim / c.NHeads
		a.defaulted("head_dim", "head_dim", c.HeadDim, "hidden_size / num_attention_heads")
	}
	return nil
}

// extractDefaulted reads the settings a family's class has a default for:
// the tie, the norm's eps, the activation and the QKV bias.
func (a *Analysis) extractDefaulted(r *Raw, c *Config, def ClassDefaults) error {
	fam := a.Family
	tie, ok, err := r.Bool("tie_word_embeddings")
	if err != nil {
		return err
	}
	if ok {
		c.TieWordEmbeddings = tie
	} else {
		c.TieWordEmbeddings = def.TieWordEmbeddings
		a.defaulted("tie_word_embeddings", "tie_word_embeddings", def.TieWordEmbeddings, fam.Architecture()+" class default")
	}

	eps, ok, err := r.Float("rms_norm_eps")
	if err != nil {
		return err
	}
	if ok {
		c.RMSNormEps = eps
	} else {
		c.RMSNormEps = def.RMSNormEps
		a.defaulted("rms_norm_eps", "rms_norm_eps", def.RMSNormEps, fam.Architecture()+" class default")
	}

	act, ok, err := r.String("hidden_act")
	if err != nil {
		return err
	}
	if ok {
		c.HiddenAct = act
	} else {
		c.HiddenAct = def.HiddenAct
		a.defaulted("hidden_act", "hidden_act", def.HiddenAct, fam.Architecture()+" class default")
	}

	bias, note, err := fam.QKVBias(r)
	if err != nil {
		return err
	}
	c.QKVBias = bias
	if note != "" {
		if strings.Contains(note, "class default") {
			a.defaulted("qkv_bias", "attention_bias", bias, fam.Architecture()+" class default")
		} else {
			a.Warnings = append(a.Warnings, note)
		}
	}
	return nil
}

// extractRope reads rope_theta and scaling from either layout: transformers 4
// (rope_theta, rope_scaling) or transformers 5 (rope_parameters).
func (a *Analysis) extractRope(r *Raw, c *Config, def ClassDefaults) error {
	params, hasParams, err := r.Object("rope_parameters")
	if err != nil {
		return err
	}
	theta, hasTheta, err := r.Float("rope_theta")
	if err != nil {
		return err
	}
	scaling, hasScaling, err := r.Object("rope_scaling")
	if err != nil {
		return err
	}
	if hasParams {
		if v, ok := params["rope_theta"]; ok {
			pt, _, err := numberOf("rope_parameters.rope_theta", v)
			if err != nil {
				return err
			}
			if hasTheta && pt != theta {
				return fmt.Errorf("config.json: rope_theta %g disagrees with rope_parameters.rope_theta %g", theta, pt)
			}
			theta, hasTheta = pt, true
		}
		if hasScaling {
			return fmt.Errorf("config.json: both rope_scaling and rope_parameters are set; transformers would use only one of them")
		}
		scaling, hasScaling = params, true
	}
	if hasTheta {
		c.RopeBase = theta
	} else {
		c.RopeBase = def.RopeTheta
		a.defaulted("rope_base", "rope_theta", def.RopeTheta, a.Family.Architecture()+" class default")
	}
	if !hasScaling {
		return nil
	}
	rs, err := parseRopeScaling(scaling)
	if err != nil {
		return err
	}
	c.RopeScaling = rs
	return nil
}

// ropeType returns the scaling type, accepting both "rope_type" and the older "type".
func ropeType(m map[string]json.RawMessage) (string, error) {
	for _, key := range []string{"rope_type", "type"} {
		if v, ok := m[key]; ok {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return "", fmt.Errorf("config.json: rope scaling %s must be a string, found %s", key, v)
			}
			return s, nil
		}
	}
	return "default", nil
}

func parseRopeScaling(m map[string]json.RawMessage) (*RopeScaling, error) {
	typ, err := ropeType(m)
	if err != nil {
		return nil, err
	}
	num := func(key string) (float64, error) {
		v, ok := m[key]
		if !ok {
			return 0, fmt.Errorf("config.json: rope scaling %q needs %s", typ, key)
		}
		f, _, err := numberOf("rope scaling "+key, v)
		return f, err
	}
	switch typ {
	case "default":
		return nil, nil
	case "linear":
		f, err := num("factor")
		if err != nil {
			return nil, err
		}
		return &RopeScaling{RopeType: typ, Factor: f}, nil
	case "llama3":
		rs := &RopeScaling{RopeType: typ}
		for _, p := range []struct {
			dst *float64
			key string
		}{{&rs.Factor, "factor"}, {&rs.LowFreqFactor, "low_freq_factor"}, {&rs.HighFreqFactor, "high_freq_factor"}} {
			if *p.dst, err = num(p.key); err != nil {
				return nil, err
			}
		}
		orig, err := num("original_max_position_embeddings")
		if err != nil {
			return nil, err
		}
		if orig != math.Trunc(orig) || orig < 1 || orig > math.MaxInt32 {
			return nil, fmt.Errorf("config.json: rope scaling original_max_position_embeddings must be a positive integer, found %g", orig)
		}
		rs.OriginalMaxPositionEmbeddings = int(orig)
		return rs, nil
	}
	return nil, fmt.Errorf("%w %q", errUnsupportedRope, typ)
}

// SupportedRopeTypes are the scalings generate_rope_lut implements.
var SupportedRopeTypes = []string{"default", "linear", "llama3"}

// Limits bound every count and dimension: far above any real checkpoint
// (Llama-3.1-405B has 126 layers, hidden 16384, intermediate 53248; the
// largest vocabularies are ~262k), and small enough that the expected tensor
// set stays ~10 MB (report lists are capped separately). A config beyond
// them is invalid_config.
var Limits = struct{ Layers, Dim, Heads, HeadDim, Hidden, Vocab int }{
	Layers: 1 << 13, Dim: 1 << 16, Heads: 1024, HeadDim: 1024, Hidden: 1 << 20, Vocab: 1 << 22,
}

// Validate checks the values Phase 0 and the NPU pipeline rely on.
func (c *Config) Validate() error {
	var problems []string
	for _, f := range []struct {
		name  string
		v     int
		limit int
	}{{"n_layers", c.NLayers, Limits.Layers}, {"emb_dim", c.EmbDim, Limits.Dim}, {"n_heads", c.NHeads, Limits.Heads},
		{"n_kv_heads", c.NKVHeads, Limits.Heads}, {"head_dim", c.HeadDim, Limits.HeadDim},
		{"hidden_dim", c.HiddenDim, Limits.Hidden}, {"vocab_size", c.VocabSize, Limits.Vocab}} {
		switch {
		case f.v <= 0:
			problems = append(problems, fmt.Sprintf("%s must be positive, found %d", f.name, f.v))
		case f.v > f.limit:
			problems = append(problems, fmt.Sprintf("%s is %d, above the sane limit %d", f.name, f.v, f.limit))
		}
	}
	if c.NHeads > 0 && c.NKVHeads > 0 && c.NHeads%c.NKVHeads != 0 {
		problems = append(problems, fmt.Sprintf("n_heads %d is not divisible by n_kv_heads %d", c.NHeads, c.NKVHeads))
	}
	if c.HeadDim > 0 && c.HeadDim%2 != 0 {
		problems = append(problems, fmt.Sprintf("head_dim %d must be even for RoPE", c.HeadDim))
	}
	if !(c.RopeBase > 0) || math.IsInf(c.RopeBase, 0) {
		problems = append(problems, fmt.Sprintf("rope_base must be positive and finite, found %g", c.RopeBase))
	}
	if !(c.RMSNormEps > 0) || c.RMSNormEps >= 1 {
		problems = append(problems, fmt.Sprintf("rms_norm_eps must be in (0, 1), found %g", c.RMSNormEps))
	}
	if rs := c.RopeScaling; rs != nil {
		if !(rs.Factor > 0) || math.IsInf(rs.Factor, 0) {
			problems = append(problems, fmt.Sprintf("rope scaling factor must be positive and finite, found %g", rs.Factor))
		}
		switch rs.RopeType {
		case "linear":
		case "llama3":
			if !(rs.HighFreqFactor > rs.LowFreqFactor && rs.LowFreqFactor > 0) || math.IsInf(rs.HighFreqFactor, 0) {
				problems = append(problems, fmt.Sprintf("llama3 rope scaling needs 0 < low_freq_factor < high_freq_factor, found %g and %g", rs.LowFreqFactor, rs.HighFreqFactor))
			}
			if rs.OriginalMaxPositionEmbeddings <= 0 {
				problems = append(problems, fmt.Sprintf("llama3 rope scaling needs original_max_position_embeddings > 0, found %d", rs.OriginalMaxPositionEmbeddings))
			}
		default:
			problems = append(problems, fmt.Sprintf("rope scaling type %q is not one of %s", rs.RopeType, strings.Join(SupportedRopeTypes[1:], ", ")))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}
