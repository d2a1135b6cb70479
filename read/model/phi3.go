package model

import (
	"fmt"
	"math"
)

// phi3Family is Phi3ForCausalLM (Phi-4-mini), validated only as the
// reference of the tree's phi4_mini_q4nx deployment: fused qkv_proj rows
// [q; k; v] and gate_up_proj rows [gate; up], partial rotary, LongRoPE.
type phi3Family struct{}

var _ Deployment = phi3Family{}

func (phi3Family) Name() string         { return "phi3" }
func (phi3Family) Title() string        { return "Phi-3" }
func (phi3Family) Architecture() string { return "Phi3ForCausalLM" }
func (phi3Family) QKNorm() bool         { return false }
func (phi3Family) Folder() string       { return "phi4_mini_q4nx" }

// Phi3Config's defaults (transformers' configuration_phi3.py).
func (phi3Family) Defaults() ClassDefaults {
	return ClassDefaults{RMSNormEps: 1e-5, RopeTheta: 10000.0, HiddenAct: "silu"}
}

func (phi3Family) QKVBias(r *Raw) (bool, string, error) { return attentionBiasFlag(r) }

// Phi-4-mini sets sliding_window to 262144, beyond any position: no window in effect.
func (phi3Family) SlidingWindow(r *Raw) (bool, string) {
	w, ok, _ := r.Int("sliding_window")
	mp, _, _ := r.Int("max_position_embeddings")
	return ok && w < mp, "sliding_window is below max_position_embeddings"
}

// Text is config.json itself.
func (phi3Family) Text(r *Raw) (*Raw, error) { return r, nil }

// Shared is the settings without the LongRoPE scaling the shared
// extraction does not implement (Deployed reads it); rope_theta stays.
func (phi3Family) Shared(text *Raw) *Raw {
	m, err := text.ropeObject()
	if err != nil || m == nil {
		return text
	}
	if typ, err := ropeType(m); err != nil || typ != "longrope" {
		return text
	}
	out := text.without("rope_scaling", "rope_parameters")
	if theta, ok := m["rope_theta"]; ok && !text.Has("rope_theta") {
		out.fields["rope_theta"] = theta
	}
	return out
}

func (phi3Family) Deployed(text *Raw, c *Config) (*Deployed, error) {
	d := &Deployed{Folder: "phi4_mini_q4nx", Prefixes: []string{"model."}, FusedQKV: true, FusedGateUp: true, PartialRotary: 1, AttentionScaling: 1}
	m, err := text.ropeObject()
	if err != nil {
		return nil, err
	}
	if v, ok, err := text.Float("partial_rotary_factor"); err != nil {
		return nil, err
	} else if ok {
		d.PartialRotary = v
	} else if v, ok := m["partial_rotary_factor"]; ok {
		if d.PartialRotary, _, err = numberOf("rope_parameters.partial_rotary_factor", v); err != nil {
			return nil, err
		}
	}
	d.RopeDim = int(math.Round(float64(c.HeadDim) * d.PartialRotary))
	if d.RopeDim <= 0 || d.RopeDim%2 != 0 || d.RopeDim > c.HeadDim {
		return nil, fmt.Errorf("partial_rotary_factor %g of head_dim %d gives %d rotated dims: must be even and in (0, head_dim]", d.PartialRotary, c.HeadDim, d.RopeDim)
	}
	if d.MaxPos, err = requireInt(text, "max_position_embeddings"); err != nil {
		return nil, err
	}
	orig, ok, err := text.Int("original_max_position_embeddings")
	if err != nil {
		return nil, err
	}
	d.OriginalMaxPos = d.MaxPos
	if ok {
		d.OriginalMaxPos = orig
	} else if v, ok := m["original_max_position_embeddings"]; ok {
		f, _, err := numberOf("rope_parameters.original_max_position_embeddings", v)
		if err != nil {
			return nil, err
		}
		d.OriginalMaxPos = int(f)
	}
	if c.RopeScaling != nil || m == nil {
		return d, nil // plain RoPE, or a scaling the shared extraction read
	}
	typ, err := ropeType(m)
	if err != nil {
		return nil, err
	}
	if typ != "longrope" {
		return nil, fmt.Errorf("rope_scaling type %q: Phi-3 implements longrope", typ)
	}
	if d.ShortFactor, err = floats(m, "short_factor"); err != nil {
		return nil, err
	}
	if d.LongFactor, err = floats(m, "long_factor"); err != nil {
		return nil, err
	}
	for name, f := range map[string][]float64{"short_factor": d.ShortFactor, "long_factor": d.LongFactor} {
		if len(f) != d.RopeDim/2 {
			return nil, fmt.Errorf("rope_scaling.%s has %d entries, expected rotated dims / 2 = %d", name, len(f), d.RopeDim/2)
		}
	}
	// transformers' _compute_longrope_parameters: √(1 + ln(s) / ln(orig)) for s = max / orig > 1.
	if s := float64(d.MaxPos) / float64(d.OriginalMaxPos); s > 1 {
		d.AttentionScaling = math.Sqrt(1 + math.Log(s)/math.Log(float64(d.OriginalMaxPos)))
	}
	return d, nil
}
