package model

// mistralFamily is MistralForCausalLM. Its modelling code applies sliding_window
// whenever it is non-null and has no use_sliding_window switch, and the class
// default is 4096: an absent key means sliding-window attention.
type mistralFamily struct{}

var _ Family = mistralFamily{}

func (mistralFamily) Name() string         { return "mistral" }
func (mistralFamily) Title() string        { return "Mistral" }
func (mistralFamily) Architecture() string { return "MistralForCausalLM" }
func (mistralFamily) QKNorm() bool         { return false }

func (mistralFamily) Defaults() ClassDefaults {
	return ClassDefaults{RMSNormEps: 1e-6, RopeTheta: 10000.0, HiddenAct: "silu"}
}

// Mistral's projections are bias-free in transformers regardless of any flag.
func (mistralFamily) QKVBias(r *Raw) (bool, string, error) {
	v, ok, err := r.Bool("attention_bias")
	if err != nil {
		return false, "", err
	}
	if ok && v {
		return false, "attention_bias is true but Mistral's modelling code has no q/k/v bias", nil
	}
	return false, "", nil
}

func (mistralFamily) SlidingWindow(r *Raw) (bool, string) {
	if !r.Has("sliding_window") {
		return true, "sliding_window is absent and MistralConfig defaults it to 4096"
	}
	if r.IsNull("sliding_window") {
		return false, ""
	}
	return true, "sliding_window is set (Mistral applies it whenever it is non-null)"
}
