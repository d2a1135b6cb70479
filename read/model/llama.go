package model

// llamaFamily is LlamaForCausalLM: Llama 2/3.x and the many checkpoints that reuse it.
type llamaFamily struct{}

var _ Family = llamaFamily{}

func (llamaFamily) Name() string         { return "llama" }
func (llamaFamily) Title() string        { return "Llama" }
func (llamaFamily) Architecture() string { return "LlamaForCausalLM" }
func (llamaFamily) QKNorm() bool         { return false }

func (llamaFamily) Defaults() ClassDefaults {
	return ClassDefaults{RMSNormEps: 1e-6, RopeTheta: 10000.0, HiddenAct: "silu"}
}

func (llamaFamily) QKVBias(r *Raw) (bool, string, error) { return attentionBiasFlag(r) }

// Llama has no sliding window; a checkpoint that sets one is not plain Llama attention.
func (llamaFamily) SlidingWindow(r *Raw) (bool, string) {
	if r.Set("sliding_window") {
		return true, "sliding_window is set on a Llama config"
	}
	return false, ""
}
