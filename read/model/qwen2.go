package model

// qwen2Family is Qwen2ForCausalLM (Qwen2, Qwen2.5). Its q/k/v projections always
// carry a bias: the modelling code hard-codes it and config.json has no key for it.
type qwen2Family struct{}

var _ Family = qwen2Family{}

func (qwen2Family) Name() string         { return "qwen2" }
func (qwen2Family) Title() string        { return "Qwen2" }
func (qwen2Family) Architecture() string { return "Qwen2ForCausalLM" }
func (qwen2Family) QKNorm() bool         { return false }

func (qwen2Family) Defaults() ClassDefaults {
	return ClassDefaults{RMSNormEps: 1e-6, RopeTheta: 10000.0, HiddenAct: "silu"}
}

func (qwen2Family) QKVBias(r *Raw) (bool, string, error) {
	v, ok, err := r.Bool("attention_bias")
	if err != nil {
		return false, "", err
	}
	if ok && !v {
		return true, "attention_bias is false but Qwen2's modelling code always has q/k/v bias", nil
	}
	return true, "", nil
}

func (qwen2Family) SlidingWindow(r *Raw) (bool, string) { return slidingUnlessDisabled(r) }
