package model

import (
	"slices"
	"strings"
	"testing"
)

// The q/k/v bias is fine (the host adds it); an o_proj bias is not. Which
// families get one from attention_bias follows transformers' modelling code.
func TestOutputBiasByFamily(t *testing.T) {
	const dims = `"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 512`
	tests := []struct {
		arch, extra string
		rejected    bool
		qkvBias     bool
	}{
		{"LlamaForCausalLM", `, "attention_bias": true`, true, false},
		{"Qwen3ForCausalLM", `, "attention_bias": true`, true, false},
		{"Qwen3ForCausalLM", `, "attention_bias": false`, false, false},
		// Qwen2's q/k/v bias is in its code; o_proj never has one.
		{"Qwen2ForCausalLM", ``, false, true},
		{"Qwen2ForCausalLM", `, "attention_bias": true`, false, true},
		// Mistral's code ignores the flag: no bias anywhere.
		{"MistralForCausalLM", `, "attention_bias": true, "sliding_window": null`, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.arch+tt.extra, func(t *testing.T) {
			a := analyzeJSON(t, `"architectures": ["`+tt.arch+`"], `+dims+tt.extra)
			var codes []string
			for _, r := range a.Rejections {
				codes = append(codes, r.Code)
			}
			if got := len(codes) == 1 && codes[0] == CodeOutputBias; got != tt.rejected {
				t.Fatalf("rejections %+v, want o_proj_bias rejection: %v", a.Rejections, tt.rejected)
			}
			if tt.rejected {
				if !strings.Contains(a.Rejections[0].Message, "the NPU attention output projection has no bias") {
					t.Errorf("message %q does not say why", a.Rejections[0].Message)
				}
				return
			}
			if a.Rejected() {
				t.Fatalf("unexpected rejections %+v", a.Rejections)
			}
			if a.Config.QKVBias != tt.qkvBias {
				t.Errorf("qkv_bias %v, want %v", a.Config.QKVBias, tt.qkvBias)
			}
		})
	}
}

func TestTensorRejections(t *testing.T) {
	names := []string{"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.bias", "model.layers.0.self_attn.o_proj.weight"}
	if rej := TensorRejections(slices.Values(names)); rej != nil {
		t.Fatalf("q/k/v bias and o_proj.weight must pass, got %+v", rej)
	}
	names = append(names, "model.layers.1.self_attn.o_proj.bias", "model.layers.0.self_attn.o_proj.bias")
	rej := TensorRejections(slices.Values(names))
	if len(rej) != 1 || rej[0].Code != CodeOutputBias ||
		!strings.Contains(rej[0].Message, "2 o_proj.bias tensor(s) (e.g. model.layers.0.self_attn.o_proj.bias)") {
		t.Fatalf("got %+v", rej)
	}
}
