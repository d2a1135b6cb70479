package model

import (
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strings"
)

// outputBiaser is implemented by the families whose modelling code can give
// o_proj a bias. Llama and Qwen3 build o_proj with bias=attention_bias, so
// their attention_bias switches on the q/k/v bias (which the host can add)
// and an output bias together. Qwen2's q/k/v bias is fixed in its code and
// its o_proj never has one; Mistral ignores the flag.
type outputBiaser interface {
	OutputBias(r *Raw) (bias bool, why string)
}

// attentionBiasOnOutput is the Llama/Qwen3 rule.
func attentionBiasOnOutput(arch string) func(r *Raw) (bool, string) {
	return func(r *Raw) (bool, string) {
		if v, ok, err := r.Bool("attention_bias"); err == nil && ok && v {
			return true, fmt.Sprintf("attention_bias is true: %s then adds a bias to o_proj as well as to q/k/v", arch)
		}
		return false, ""
	}
}

func (f llamaFamily) OutputBias(r *Raw) (bool, string) {
	return attentionBiasOnOutput(f.Architecture())(r)
}

func (f qwen3Family) OutputBias(r *Raw) (bool, string) {
	return attentionBiasOnOutput(f.Architecture())(r)
}

var (
	_ outputBiaser = llamaFamily{}
	_ outputBiaser = qwen3Family{}
)

var outputBiasName = regexp.MustCompile(`^model\.layers\.\d+\.self_attn\.o_proj\.bias$`)

// TensorRejections applies the architecture rules that only the checkpoint
// can answer, before any tensor is compared with the config: an o_proj.bias
// in the checkpoint is a model the NPU pipeline cannot run, whatever the
// config says (transformers would drop it with a warning, and the baseline
// would silently be another model). names is every tensor name, in any
// order; a deep checkpoint has tens of thousands, so the suffix is tested
// before the pattern.
func TensorRejections(names iter.Seq[string]) []Rejection {
	var layers []string
	for n := range names {
		if strings.HasSuffix(n, ".o_proj.bias") && outputBiasName.MatchString(n) {
			layers = append(layers, n)
		}
	}
	if len(layers) == 0 {
		return nil
	}
	slices.Sort(layers)
	return []Rejection{{Code: CodeOutputBias, Message: fmt.Sprintf(
		"the checkpoint holds %d o_proj.bias tensor(s) (e.g. %s): the NPU attention output projection has no bias", len(layers), layers[0])}}
}
