package model

import (
	"fmt"
	"slices"
	"testing"
)

// TestExpectedTensors checks the names, order and shapes against the list
// written out the plain way, for each combination of bias and q/k norm.
func TestExpectedTensors(t *testing.T) {
	for _, c := range []Config{
		{NLayers: 3, EmbDim: 64, NHeads: 4, NKVHeads: 2, HeadDim: 32, HiddenDim: 96, VocabSize: 100},
		{NLayers: 2, EmbDim: 64, NHeads: 4, NKVHeads: 2, HeadDim: 16, HiddenDim: 96, VocabSize: 100, QKVBias: true, TieWordEmbeddings: true},
		{NLayers: 11, EmbDim: 64, NHeads: 4, NKVHeads: 4, HeadDim: 16, HiddenDim: 96, VocabSize: 100, QKNorm: true},
		{NLayers: 0, EmbDim: 8, VocabSize: 10},
	} {
		emb, vocab := int64(c.EmbDim), int64(c.VocabSize)
		q, kv, hid, hd := int64(c.NHeads*c.HeadDim), int64(c.NKVHeads*c.HeadDim), int64(c.HiddenDim), int64(c.HeadDim)
		want := []TensorSpec{{"model.embed_tokens.weight", []int64{vocab, emb}}}
		for i := range c.NLayers {
			p := fmt.Sprintf("model.layers.%d.", i)
			want = append(want,
				TensorSpec{p + "input_layernorm.weight", []int64{emb}},
				TensorSpec{p + "self_attn.q_proj.weight", []int64{q, emb}},
				TensorSpec{p + "self_attn.k_proj.weight", []int64{kv, emb}},
				TensorSpec{p + "self_attn.v_proj.weight", []int64{kv, emb}},
				TensorSpec{p + "self_attn.o_proj.weight", []int64{emb, q}},
				TensorSpec{p + "post_attention_layernorm.weight", []int64{emb}},
				TensorSpec{p + "mlp.gate_proj.weight", []int64{hid, emb}},
				TensorSpec{p + "mlp.up_proj.weight", []int64{hid, emb}},
				TensorSpec{p + "mlp.down_proj.weight", []int64{emb, hid}})
			if c.QKVBias {
				want = append(want, TensorSpec{p + "self_attn.q_proj.bias", []int64{q}},
					TensorSpec{p + "self_attn.k_proj.bias", []int64{kv}}, TensorSpec{p + "self_attn.v_proj.bias", []int64{kv}})
			}
			if c.QKNorm {
				want = append(want, TensorSpec{p + "self_attn.q_norm.weight", []int64{hd}}, TensorSpec{p + "self_attn.k_norm.weight", []int64{hd}})
			}
		}
		want = append(want, TensorSpec{"model.norm.weight", []int64{emb}})
		if !c.TieWordEmbeddings {
			want = append(want, TensorSpec{"lm_head.weight", []int64{vocab, emb}})
		}
		got := ExpectedTensors(&c)
		if !slices.EqualFunc(got, want, func(a, b TensorSpec) bool { return a.Name == b.Name && slices.Equal(a.Shape, b.Shape) }) {
			t.Errorf("config %+v:\ngot  %v\nwant %v", c, got, want)
		}
		// Shapes are shared between layers: appending to one must not change another.
		if len(got) > 2 {
			_ = append(got[1].Shape, 7)
			if !slices.Equal(ExpectedTensors(&c)[1].Shape, want[1].Shape) || !slices.Equal(got[1].Shape, want[1].Shape) {
				t.Errorf("an append changed a shared shape")
			}
		}
	}
}

// TestTensorSetFind checks that the set without written names agrees with
// ExpectedTensors position by position, and that each position has exactly
// one name: near-misses of a layer name are not found.
func TestTensorSetFind(t *testing.T) {
	for _, c := range []Config{
		{NLayers: 12, EmbDim: 64, NHeads: 4, NKVHeads: 2, HeadDim: 32, HiddenDim: 96, VocabSize: 100, QKVBias: true, QKNorm: true},
		{NLayers: 2, EmbDim: 64, NHeads: 4, NKVHeads: 2, HeadDim: 16, HiddenDim: 96, VocabSize: 100, TieWordEmbeddings: true},
		{NLayers: 0, EmbDim: 8, VocabSize: 10},
	} {
		set, list := ExpectedSet(&c), ExpectedTensors(&c)
		if set.Len() != len(list) {
			t.Fatalf("config %+v: Len %d, ExpectedTensors has %d", c, set.Len(), len(list))
		}
		for i, want := range list {
			got := set.Spec(i)
			if got.Name != want.Name || !slices.Equal(got.Shape, want.Shape) || !slices.Equal(set.Shape(i), want.Shape) {
				t.Errorf("position %d: Spec %v, Shape %v, want %v", i, got, set.Shape(i), want)
			}
			if at, ok := set.Find(want.Name); !ok || at != i {
				t.Errorf("Find(%q) = %d, %t; want %d", want.Name, at, ok, i)
			}
		}
		for _, name := range []string{
			"model.layers.01.input_layernorm.weight", "model.layers.+1.input_layernorm.weight",
			"model.layers.-1.input_layernorm.weight", "model.layers..input_layernorm.weight",
			"model.layers.1", "model.layers.1.", "model.layers.", "model.layers.1.input_layernorm.weight.x",
			fmt.Sprintf("model.layers.%d.input_layernorm.weight", c.NLayers),
			"model.layers.18446744073709551617.input_layernorm.weight",
			"model.layers.1.self_attn.o_proj.bias", "model.embed_tokens", "lm_head.weight.", "",
		} {
			if at, ok := set.Find(name); ok {
				t.Errorf("config %+v: Find(%q) = %d, want not found", c, name, at)
			}
		}
	}
}
