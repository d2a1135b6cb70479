package safetensors

import (
	"fmt"
	"path/filepath"
)

// llama8B holds the Llama-3.1-8B shapes Write8BShape reproduces.
var llama8B = struct {
	vocab, emb, layers, heads, kvHeads, headDim, inter int64
}{vocab: 128256, emb: 4096, layers: 32, heads: 32, kvHeads: 8, headDim: 128, inter: 14336}

// Write8BShape writes into dir a sparse BF16 checkpoint with the tensor names
// and shapes of Llama-3.1-8B (untied lm_head) in four shards plus
// model.safetensors.index.json. The files have the real sizes (~16 GB in
// all) but no data blocks, so writing and reading headers is cheap.
func Write8BShape(dir string) error {
	m := llama8B
	const shards = 4
	perShard := m.layers / shards
	shardName := func(i int64) string { return fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, shards) }
	bf16 := func(name string, shape ...int64) WriteTensor {
		return WriteTensor{Name: name, DType: "BF16", Shape: shape}
	}
	weightMap := map[string]string{}
	var total int64
	for s := range int64(shards) {
		var ts []WriteTensor
		if s == 0 {
			ts = append(ts, bf16("model.embed_tokens.weight", m.vocab, m.emb))
		}
		for l := s * perShard; l < (s+1)*perShard; l++ {
			p := fmt.Sprintf("model.layers.%d.", l)
			ts = append(ts,
				bf16(p+"input_layernorm.weight", m.emb),
				bf16(p+"self_attn.q_proj.weight", m.heads*m.headDim, m.emb),
				bf16(p+"self_attn.k_proj.weight", m.kvHeads*m.headDim, m.emb),
				bf16(p+"self_attn.v_proj.weight", m.kvHeads*m.headDim, m.emb),
				bf16(p+"self_attn.o_proj.weight", m.emb, m.heads*m.headDim),
				bf16(p+"post_attention_layernorm.weight", m.emb),
				bf16(p+"mlp.gate_proj.weight", m.inter, m.emb),
				bf16(p+"mlp.up_proj.weight", m.inter, m.emb),
				bf16(p+"mlp.down_proj.weight", m.emb, m.inter),
			)
		}
		if s == shards-1 {
			ts = append(ts, bf16("model.norm.weight", m.emb), bf16("lm_head.weight", m.vocab, m.emb))
		}
		name := shardName(s)
		for _, t := range ts {
			weightMap[t.Name] = name
			n, _ := elementCount(t.Shape)
			total += int64(n) * 2
		}
		if err := WriteFile(filepath.Join(dir, name), ts, map[string]string{"format": "pt"}); err != nil {
			return err
		}
	}
	return WriteIndex(filepath.Join(dir, IndexFile), weightMap, total)
}
