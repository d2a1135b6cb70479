package model

// qwen3Family is Qwen3ForCausalLM: RMSNorm on q and k per head, no bias by
// default, and a head_dim that need not equal hidden_size / num_attention_heads.
type qwen3Family struct{}

var _ Family = qwen3Family{}

func (qwen3Family) Name() string         { return "qwen3" }
func (qwen3Family) Title() string        { return "Qwen3" }
func (qwen3Family) Architecture() string { return "Qwen3ForCausalLM" }
func (qwen3Family) QKNorm() bool         { return true }

// Qwen3Config defaults head_dim to 128, not hidden_size / num_attention_heads.
func (qwen3Family) Defaults() ClassDefaults {
	return ClassDefaults{RMSNormEps: 1e-6, RopeTheta: 10000.0, HiddenAct: "silu", HeadDim: 128}
}

func (qwen3Family) QKVBias(r *Raw) (bool, string, error) { return attentionBiasFlag(r) }

func (qwen3Family) SlidingWindow(r *Raw) (bool, string) { return slidingUnlessDisabled(r) }
