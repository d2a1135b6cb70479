// Package tensornames is the one vocabulary of a decoder layer's tensors as
// the mlir-air tree's loaders name them (LlamaWeights' fields, the quantized
// loaders' dict keys) and as a HuggingFace checkpoint names them. Gate 1,
// the quantized gates and the worker (through the generated
// python/pyshim/phase0_shim/quant/vocab.py) all read it from here.
package tensornames

import (
	"slices"
	"strings"
)

// Tensor is one tensor of a layer.
type Tensor struct {
	Field string // LlamaWeights' field: "wq"
	// HF is the checkpoint's tensor under model.layers.<k>.
	HF string
	// Key is the quantized loaders' layer_weights(k) dict key ("q"); only
	// projections have one.
	Key string
	// Projection: one of the seven matrices, quantized in a bundle and
	// stored (in, out) by every loader for y = x @ W. The others (norms,
	// biases) every format keeps in bf16.
	Projection bool
	// Option is the config feature the tensor needs ("" when every model
	// has it): "qkv_bias" or "qk_norm".
	Option string
}

// Layer is every tensor a layer may have, in LlamaWeights' order.
var Layer = []Tensor{
	{Field: "attn_norm", HF: "input_layernorm.weight"},
	{Field: "wq", HF: "self_attn.q_proj.weight", Key: "q", Projection: true},
	{Field: "wk", HF: "self_attn.k_proj.weight", Key: "k", Projection: true},
	{Field: "wv", HF: "self_attn.v_proj.weight", Key: "v", Projection: true},
	{Field: "wo", HF: "self_attn.o_proj.weight", Key: "o", Projection: true},
	{Field: "ffn_norm", HF: "post_attention_layernorm.weight"},
	{Field: "w_gate", HF: "mlp.gate_proj.weight", Key: "gate", Projection: true},
	{Field: "w_up", HF: "mlp.up_proj.weight", Key: "up", Projection: true},
	{Field: "w_down", HF: "mlp.down_proj.weight", Key: "down", Projection: true},
	{Field: "bq", HF: "self_attn.q_proj.bias", Option: "qkv_bias"},
	{Field: "bk", HF: "self_attn.k_proj.bias", Option: "qkv_bias"},
	{Field: "bv", HF: "self_attn.v_proj.bias", Option: "qkv_bias"},
	{Field: "q_norm", HF: "self_attn.q_norm.weight", Option: "qk_norm"},
	{Field: "k_norm", HF: "self_attn.k_norm.weight", Option: "qk_norm"},
}

// Partners are the projections most easily confused with each other: the
// same shape by design, so a swap passes every shape check.
var Partners = map[string]string{"w_gate": "w_up", "w_up": "w_gate", "wk": "wv", "wv": "wk", "wq": "wo", "wo": "wq"}

// Global is a whole-model tensor of the loaders, with its HF tensor.
type Global struct {
	Field string
	HF    string
}

// Globals: the embedding, the final norm and the head (tied: the embedding).
var Globals = []Global{
	{"embed_table", "model.embed_tokens.weight"},
	{"final_norm", "model.norm.weight"},
	{"lm_head", "lm_head.weight"},
}

// Projections are the layer's seven matrices, in order.
func Projections() []Tensor {
	return slices.DeleteFunc(slices.Clone(Layer), func(t Tensor) bool { return !t.Projection })
}

// ProjectionFields are the projections' LlamaWeights fields, in order.
func ProjectionFields() []string {
	var out []string
	for _, t := range Projections() {
		out = append(out, t.Field)
	}
	return out
}

// IsProjection says whether field names a projection.
func IsProjection(field string) bool {
	return slices.ContainsFunc(Layer, func(t Tensor) bool { return t.Projection && t.Field == field })
}

// Module is the projection's module path under model.layers.<k>
// ("self_attn.q_proj"): its HF tensor without ".weight".
func (t Tensor) Module() string { return strings.TrimSuffix(t.HF, ".weight") }
