package tensornames

import "slices"

// Family is what a deployed family (read/model's Deployment: Gemma 3,
// Phi-3) adds to the vocabulary: where its reference keeps the text model,
// the kept tensors beyond the shared ones, the fused reference tensors the
// loaders hold split, and the conventions its bundles store kept tensors
// under. The shared names stay the vocabulary's; a family only adds.
type Additions struct {
	Name string // read/model's family name: "gemma3"
	// Prefixes are where the reference checkpoint may keep the text model
	// (its "model." names under them), tried in order.
	Prefixes []string
	// Extra are the family's kept layer tensors beyond Layer's.
	Extra []Tensor
	// RMS are the fields of a class loader's layer_rms(k) tuple, in order
	// (Layer's attn_norm and ffn_norm when the family does not say).
	RMS []string
	// Fused are reference tensors holding several projections' rows.
	Fused []Fused
	// Stored says how the bundle stores a kept tensor (field → convention):
	// the reference is brought to it before the bitwise comparison.
	Stored map[string]Convention
	// QuantizedHead: the folder's loader dequantizes the bundle's own
	// quantized lm_head though the reference ties it (Gemma 3's raw tied
	// matrix in Q4NX); Phi-4-mini's loader takes the embedding instead.
	QuantizedHead bool
}

// Fused is one reference tensor (under model.layers.<k>.) whose rows are
// the Parts' projections, in that order.
type Fused struct {
	HF    string
	Parts []string // LlamaWeights fields, in row order
}

// Convention is how a bundle stores a kept tensor relative to the reference.
type Convention string

const (
	// OnePlus: the norm's weight w stored as 1 + w (Gemma's x · (1 + w),
	// folded so the kernel computes x · w).
	OnePlus Convention = "one_plus"
	// EmbedScale: the embedding stored multiplied by √hidden.
	EmbedScale Convention = "embed_scale"
)

// Families are the deployed families' additions.
var FamilyAdditions = []Additions{
	{
		Name:     "gemma3",
		Prefixes: []string{"language_model.model.", "model.language_model.", "model."},
		Extra: []Tensor{
			{Field: "pre_ffn_norm", HF: "pre_feedforward_layernorm.weight"},
			{Field: "post_ffn_norm", HF: "post_feedforward_layernorm.weight"},
		},
		RMS: []string{"attn_norm", "ffn_norm", "pre_ffn_norm", "post_ffn_norm"},
		Stored: map[string]Convention{
			"attn_norm": OnePlus, "ffn_norm": OnePlus, "pre_ffn_norm": OnePlus, "post_ffn_norm": OnePlus,
			"q_norm": OnePlus, "k_norm": OnePlus, "final_norm": OnePlus, "embed_table": EmbedScale,
		},
		QuantizedHead: true,
	},
	{
		Name:     "phi3",
		Prefixes: []string{"model."},
		Fused: []Fused{
			{HF: "self_attn.qkv_proj.weight", Parts: []string{"wq", "wk", "wv"}},
			{HF: "mlp.gate_up_proj.weight", Parts: []string{"w_gate", "w_up"}},
		},
	},
}

// FamilyNamed is the deployed family called name.
func AdditionsOf(name string) (Additions, bool) {
	i := slices.IndexFunc(FamilyAdditions, func(f Additions) bool { return f.Name == name })
	if i < 0 {
		return Additions{}, false
	}
	return FamilyAdditions[i], true
}

// FusedOf is the fused reference tensor holding field's rows, and the
// field's place among its parts.
func (f Additions) FusedOf(field string) (Fused, int, bool) {
	for _, fu := range f.Fused {
		if i := slices.Index(fu.Parts, field); i >= 0 {
			return fu, i, true
		}
	}
	return Fused{}, 0, false
}

// KeptFields are the family's kept layer fields beyond the shared ones.
func (f Additions) KeptFields() []string {
	var out []string
	for _, t := range f.Extra {
		out = append(out, t.Field)
	}
	return out
}
