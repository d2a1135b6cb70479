package model

import (
	"fmt"
	"math"
	"slices"
)

// gemma3Family is Gemma3ForConditionalGeneration (Gemma 3 4B and up: a
// SigLIP vision tower and a projector beside the text model), validated
// only as the reference of the tree's gemma3_4b_q4nx deployment. The text
// model: four RMSNorms per layer computing x · (1 + w), QK-norm, GELU-tanh
// MLP, the embedding × √hidden, 5 sliding-window layers per global one
// (local RoPE base rope_local_base_freq, global rope_theta with linear
// scaling).
type gemma3Family struct{}

var _ Deployment = gemma3Family{}

func (gemma3Family) Name() string         { return "gemma3" }
func (gemma3Family) Title() string        { return "Gemma 3" }
func (gemma3Family) Architecture() string { return "Gemma3ForConditionalGeneration" }
func (gemma3Family) QKNorm() bool         { return true }
func (gemma3Family) Folder() string       { return "gemma3_4b_q4nx" }

// Gemma3TextConfig's defaults (transformers' configuration_gemma3.py).
func (gemma3Family) Defaults() ClassDefaults {
	return ClassDefaults{TieWordEmbeddings: true, RMSNormEps: 1e-6, RopeTheta: 1e6, HiddenAct: "gelu_pytorch_tanh", HeadDim: 256}
}

func (gemma3Family) QKVBias(r *Raw) (bool, string, error) { return attentionBiasFlag(r) }

func (gemma3Family) SlidingWindow(r *Raw) (bool, string) {
	return r.Set("sliding_window"), "Gemma 3 interleaves sliding-window layers"
}

// Text is text_config: the multimodal class keeps the text model's settings there.
func (gemma3Family) Text(r *Raw) (*Raw, error) {
	return r.sub("text_config")
}

func (gemma3Family) Deployed(text *Raw, c *Config) (*Deployed, error) {
	d := &Deployed{Folder: "gemma3_4b_q4nx", NormPlusOne: true, EmbedScale: math.Sqrt(float64(c.EmbDim)),
		// transformers ≥ 4.52 saves model.language_model.; the published
		// checkpoints keep language_model.model.
		Prefixes: []string{"language_model.model.", "model.language_model.", "model."}}
	if act, ok, err := text.String("hidden_activation"); err != nil {
		return nil, err
	} else if ok {
		c.HiddenAct = act
	}
	d.SlidingWindow, d.SlidingPattern, d.LocalRopeBase, d.QueryPreAttnScalar = 4096, 6, 10000, 256
	if v, ok, err := text.Int("sliding_window"); err != nil {
		return nil, err
	} else if ok {
		d.SlidingWindow = v
	}
	types, hasTypes, err := text.Strings("layer_types")
	if err != nil {
		return nil, err
	}
	pattern := false
	for _, key := range []string{"sliding_window_pattern", "_sliding_window_pattern"} {
		if v, ok, err := text.Int(key); err != nil {
			return nil, err
		} else if ok {
			d.SlidingPattern, pattern = v, true
			break
		}
	}
	if hasTypes {
		// transformers 5 writes the pattern out per layer.
		if len(types) != c.NLayers {
			return nil, fmt.Errorf("text_config.layer_types has %d entries for %d layers", len(types), c.NLayers)
		}
		if i := slices.Index(types, "full_attention"); !pattern && i >= 0 {
			d.SlidingPattern = i + 1
		}
		for k, t := range types {
			if (t == "full_attention") != d.GlobalLayer(k) {
				return nil, fmt.Errorf("text_config.layer_types[%d] is %q, but sliding_window_pattern %d makes layer %d %s", k, t, d.SlidingPattern, k, kind(d.GlobalLayer(k)))
			}
		}
	}
	if v, ok, err := localRopeBase(text); err != nil {
		return nil, err
	} else if ok {
		d.LocalRopeBase = v
	}
	if v, ok, err := text.Float("query_pre_attn_scalar"); err != nil {
		return nil, err
	} else if ok {
		d.QueryPreAttnScalar = v
	}
	if d.SlidingWindow <= 0 || d.SlidingPattern <= 0 || !(d.LocalRopeBase > 0) {
		return nil, fmt.Errorf("text_config: sliding_window %d, sliding_window_pattern %d and rope_local_base_freq %g must be positive", d.SlidingWindow, d.SlidingPattern, d.LocalRopeBase)
	}
	return d, nil
}

func kind(global bool) string {
	if global {
		return "global (full_attention)"
	}
	return "local (sliding_attention)"
}

// Shared reads the global layers' RoPE: transformers 5 writes
// rope_parameters per layer type, the global one under full_attention.
func (gemma3Family) Shared(text *Raw) *Raw {
	m, ok, err := text.Object("rope_parameters")
	if err != nil || !ok {
		return text
	}
	full, ok := m["full_attention"]
	if !ok {
		return text
	}
	out := text.without("rope_parameters")
	out.fields["rope_parameters"] = full
	return out
}

// localRopeBase is rope_local_base_freq (transformers 4) or
// rope_parameters.sliding_attention.rope_theta (transformers 5).
func localRopeBase(text *Raw) (float64, bool, error) {
	if v, ok, err := text.Float("rope_local_base_freq"); err != nil || ok {
		return v, ok, err
	}
	m, ok, err := text.Object("rope_parameters")
	if err != nil || !ok {
		return 0, false, err
	}
	sub, ok := m["sliding_attention"]
	if !ok {
		return 0, false, nil
	}
	r, err := ParseRaw(sub)
	if err != nil {
		return 0, false, fmt.Errorf("text_config.rope_parameters.sliding_attention: %w", err)
	}
	return r.Float("rope_theta")
}
