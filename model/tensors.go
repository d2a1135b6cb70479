package model

import "strconv"

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
	// Every layer's tensors have the same shapes: one slice each, shared
	// (capacity-capped, so an append copies). Names are written into one
	// buffer and cut from one string: a deep checkpoint has tens of
	// thousands of them, and one allocation each was most of the cost.
	shape := func(dims ...int64) []int64 { return dims[:len(dims):len(dims)] }
	layer := []TensorSpec{
		{"input_layernorm.weight", shape(emb)},
		{"self_attn.q_proj.weight", shape(q, emb)},
		{"self_attn.k_proj.weight", shape(kv, emb)},
		{"self_attn.v_proj.weight", shape(kv, emb)},
		{"self_attn.o_proj.weight", shape(emb, q)},
		{"post_attention_layernorm.weight", shape(emb)},
		{"mlp.gate_proj.weight", shape(hid, emb)},
		{"mlp.up_proj.weight", shape(hid, emb)},
		{"mlp.down_proj.weight", shape(emb, hid)},
	}
	if c.QKVBias {
		layer = append(layer,
			TensorSpec{"self_attn.q_proj.bias", shape(q)},
			TensorSpec{"self_attn.k_proj.bias", shape(kv)},
			TensorSpec{"self_attn.v_proj.bias", shape(kv)},
		)
	}
	if c.QKNorm {
		layer = append(layer,
			TensorSpec{"self_attn.q_norm.weight", shape(hd)},
			TensorSpec{"self_attn.k_norm.weight", shape(hd)},
		)
	}
	layers := max(c.NLayers, 0)
	perLayer := 0
	for _, t := range layer {
		perLayer += len("model.layers.") + 20 + 1 + len(t.Name)
	}
	buf := make([]byte, 0, layers*perLayer)
	ends := make([]int, 0, layers*len(layer))
	for i := range layers {
		for _, t := range layer {
			buf = append(buf, "model.layers."...)
			buf = strconv.AppendInt(buf, int64(i), 10)
			buf = append(buf, '.')
			buf = append(buf, t.Name...)
			ends = append(ends, len(buf))
		}
	}
	names := string(buf)
	out := make([]TensorSpec, 0, len(ends)+3)
	out = append(out, TensorSpec{"model.embed_tokens.weight", shape(vocab, emb)})
	from := 0
	for j, end := range ends {
		out = append(out, TensorSpec{names[from:end], layer[j%len(layer)].Shape})
		from = end
	}
	out = append(out, TensorSpec{"model.norm.weight", shape(emb)})
	if !c.TieWordEmbeddings {
		out = append(out, TensorSpec{"lm_head.weight", shape(vocab, emb)})
	}
	return out
}
