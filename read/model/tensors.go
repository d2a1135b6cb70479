package model

import "strconv"

// TensorSpec is one tensor the checkpoint must hold, with its HF name and shape.
type TensorSpec struct {
	Name  string
	Shape []int64
}

// layerPrefix starts the name of every per-layer tensor.
const layerPrefix = "model.layers."

// TensorSet is the expected tensor set of a config, its names not written
// out: a deep checkpoint has tens of thousands, and writing each name (and
// looking each up) was most of what gate 1 cost. Positions are those of
// ExpectedTensors.
type TensorSet struct {
	first  []TensorSpec // before the layers
	layer  []TensorSpec // each layer's, names after "model.layers.<i>."
	layers int
	last   []TensorSpec // after the layers
}

// ExpectedSet is the full HF name → shape set for a config. The family has
// already decided QKVBias and QKNorm, so this is the same for every family.
func ExpectedSet(c *Config) *TensorSet {
	emb, vocab := int64(c.EmbDim), int64(c.VocabSize)
	q, kv, hid, hd := int64(c.NHeads*c.HeadDim), int64(c.NKVHeads*c.HeadDim), int64(c.HiddenDim), int64(c.HeadDim)
	// Every layer's tensors have the same shapes: one slice each, shared
	// (capacity-capped, so an append copies).
	shape := func(dims ...int64) []int64 { return dims[:len(dims):len(dims)] }
	s := &TensorSet{layers: max(c.NLayers, 0)}
	s.first = []TensorSpec{{"model.embed_tokens.weight", shape(vocab, emb)}}
	s.layer = []TensorSpec{
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
		s.layer = append(s.layer,
			TensorSpec{"self_attn.q_proj.bias", shape(q)},
			TensorSpec{"self_attn.k_proj.bias", shape(kv)},
			TensorSpec{"self_attn.v_proj.bias", shape(kv)},
		)
	}
	if c.QKNorm {
		s.layer = append(s.layer,
			TensorSpec{"self_attn.q_norm.weight", shape(hd)},
			TensorSpec{"self_attn.k_norm.weight", shape(hd)},
		)
	}
	s.last = []TensorSpec{{"model.norm.weight", shape(emb)}}
	if !c.TieWordEmbeddings {
		s.last = append(s.last, TensorSpec{"lm_head.weight", shape(vocab, emb)})
	}
	return s
}

// Len is the number of expected tensors.
func (s *TensorSet) Len() int { return len(s.first) + s.layers*len(s.layer) + len(s.last) }

// Find returns the position of the expected tensor of that name. Layer
// numbers are read strictly (decimal, no sign, no leading zero), so each
// position has exactly one name.
func (s *TensorSet) Find(name string) (int, bool) {
	if len(name) > len(layerPrefix) && name[:len(layerPrefix)] == layerPrefix {
		rest := name[len(layerPrefix):]
		n, i := 0, 0
		for i < len(rest) && i < 18 && '0' <= rest[i] && rest[i] <= '9' {
			n = n*10 + int(rest[i]-'0')
			i++
		}
		if i == 0 || i == len(rest) || rest[i] != '.' || (rest[0] == '0' && i > 1) || n >= s.layers {
			return 0, false
		}
		suffix := rest[i+1:]
		for j := range s.layer {
			if s.layer[j].Name == suffix {
				return len(s.first) + n*len(s.layer) + j, true
			}
		}
		return 0, false
	}
	for j := range s.first {
		if s.first[j].Name == name {
			return j, true
		}
	}
	for j := range s.last {
		if s.last[j].Name == name {
			return len(s.first) + s.layers*len(s.layer) + j, true
		}
	}
	return 0, false
}

// Spec returns the expected tensor at position i (0 <= i < Len). Shapes are
// shared: do not modify them.
func (s *TensorSet) Spec(i int) TensorSpec {
	if i < len(s.first) {
		return s.first[i]
	}
	i -= len(s.first)
	if n := s.layers * len(s.layer); i >= n {
		return s.last[i-n]
	}
	t := s.layer[i%len(s.layer)]
	return TensorSpec{layerPrefix + strconv.Itoa(i/len(s.layer)) + "." + t.Name, t.Shape}
}

// Shape returns the shape of the expected tensor at position i, without
// writing its name. Shapes are shared: do not modify them.
func (s *TensorSet) Shape(i int) []int64 {
	if i < len(s.first) {
		return s.first[i].Shape
	}
	i -= len(s.first)
	if n := s.layers * len(s.layer); i >= n {
		return s.last[i-n].Shape
	}
	return s.layer[i%len(s.layer)].Shape
}

// ExpectedTensors is the full HF name → shape set for a config, in order:
// the embeddings, each layer's tensors, the final norm and the head.
func ExpectedTensors(c *Config) []TensorSpec {
	s := ExpectedSet(c)
	// Names are written into one buffer and cut from one string: a deep
	// checkpoint has tens of thousands of them, and one allocation each was
	// most of the cost.
	perLayer := 0
	for _, t := range s.layer {
		perLayer += len(layerPrefix) + 20 + 1 + len(t.Name)
	}
	buf := make([]byte, 0, s.layers*perLayer)
	ends := make([]int, 0, s.layers*len(s.layer))
	for i := range s.layers {
		for _, t := range s.layer {
			buf = append(buf, layerPrefix...)
			buf = strconv.AppendInt(buf, int64(i), 10)
			buf = append(buf, '.')
			buf = append(buf, t.Name...)
			ends = append(ends, len(buf))
		}
	}
	names := string(buf)
	out := make([]TensorSpec, 0, s.Len())
	out = append(out, s.first...)
	from := 0
	for j, end := range ends {
		out = append(out, TensorSpec{names[from:end], s.layer[j%len(s.layer)].Shape})
		from = end
	}
	return append(out, s.last...)
}
