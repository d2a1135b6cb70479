package model

import "fmt"

// TensorSpec is one tensor the checkpoint must hold, with its HF name and shape.
type TensorSpec struct {
	Name  string
	Shape []int64
}

// ExpectedTensors is the full HF name → shape set for a config. The family has
// already decided QKVBias and QKNorm, so this is the same for every family.
func ExpectedTensors(c *Config) []TensorSpec {
	emb, vocab := int64(c.EmbDim), int64(c.VocabSize)
	q, kv, hid, hd := int64(c.NHeads*c.HeadDim), int64(c.NKVHeads*c.HeadDim), int64(c.HiddenDim), int64(c.HeadDim)
	out := []TensorSpec{{"model.embed_tokens.weight", []int64{vocab, emb}}}
	for i := 0; i < c.NLayers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		out = append(out,
			TensorSpec{p + "input_layernorm.weight", []int64{emb}},
			TensorSpec{p + "self_attn.q_proj.weight", []int64{q, emb}},
			TensorSpec{p + "self_attn.k_proj.weight", []int64{kv, emb}},
			TensorSpec{p + "self_attn.v_proj.weight", []int64{kv, emb}},
			TensorSpec{p + "self_attn.o_proj.weight", []int64{emb, q}},
			TensorSpec{p + "post_attention_layernorm.weight", []int64{emb}},
			TensorSpec{p + "mlp.gate_proj.weight", []int64{hid, emb}},
			TensorSpec{p + "mlp.up_proj.weight", []int64{hid, emb}},
			TensorSpec{p + "mlp.down_proj.weight", []int64{emb, hid}},
		)
		if c.QKVBias {
			out = append(out,
				TensorSpec{p + "self_attn.q_proj.bias", []int64{q}},
				TensorSpec{p + "self_attn.k_proj.bias", []int64{kv}},
				TensorSpec{p + "self_attn.v_proj.bias", []int64{kv}},
			)
		}
		if c.QKNorm {
			out = append(out,
				TensorSpec{p + "self_attn.q_norm.weight", []int64{hd}},
				TensorSpec{p + "self_attn.k_norm.weight", []int64{hd}},
			)
		}
	}
	out = append(out, TensorSpec{"model.norm.weight", []int64{emb}})
	if !c.TieWordEmbeddings {
		out = append(out, TensorSpec{"lm_head.weight", []int64{vocab, emb}})
	}
	return out
}
