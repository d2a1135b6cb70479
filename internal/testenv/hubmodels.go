package testenv

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
)

// HubModel is a real hub model as a fake repository: its real config.json
// values and the tensor layout of its real checkpoint (names, shapes,
// dtypes, shard count), with tensor bodies that exist nowhere (SparseFile).
// Want is the triage outcome phase0 must reach: "pass", "reject:<codes>"
// (every rejection code, in the gate's order) or
// "fail:weights".
type HubModel struct {
	ID     string
	Config string
	Shards int  // 1: model.safetensors; more: an index and model-0000k-of-0000N.safetensors
	Gated  bool // served only with HubToken
	Want   string
}

// HubToken is the token the gated fake repositories accept.
const HubToken = "hf_fake_triage_token"

// The configs several upstream entries share, with the real files' values.
const llama1b = `"architectures":["LlamaForCausalLM"],"attention_bias":false,"attention_dropout":0.0,"bos_token_id":128000,
"head_dim":64,"hidden_act":"silu","hidden_size":2048,"initializer_range":0.02,"intermediate_size":8192,
"max_position_embeddings":131072,"mlp_bias":false,"model_type":"llama","num_attention_heads":32,"num_hidden_layers":16,
"num_key_value_heads":8,"pretraining_tp":1,"rms_norm_eps":1e-05,
"rope_scaling":{"factor":32.0,"high_freq_factor":4.0,"low_freq_factor":1.0,"original_max_position_embeddings":8192,"rope_type":"llama3"},
"rope_theta":500000.0,"torch_dtype":"bfloat16","transformers_version":"4.45.0.dev0","use_cache":true,"vocab_size":128256`

const qwen05 = `"architectures":["Qwen2ForCausalLM"],"attention_dropout":0.0,"bos_token_id":151643,"hidden_act":"silu",
"hidden_size":896,"initializer_range":0.02,"intermediate_size":4864,"max_position_embeddings":32768,"max_window_layers":24,
"model_type":"qwen2","num_attention_heads":14,"num_hidden_layers":24,"num_key_value_heads":2,"rms_norm_eps":1e-06,
"rope_theta":1000000.0,"sliding_window":32768,"tie_word_embeddings":true,"torch_dtype":"bfloat16","use_cache":true,
"use_sliding_window":false,"vocab_size":151936`

func qwen3Config(hidden, inter, layers, heads int) string {
	return fmt.Sprintf(`{"architectures":["Qwen3ForCausalLM"],"attention_bias":false,"attention_dropout":0.0,"bos_token_id":151643,
"eos_token_id":151645,"head_dim":128,"hidden_act":"silu","hidden_size":%d,"initializer_range":0.02,"intermediate_size":%d,
"max_position_embeddings":40960,"max_window_layers":%d,"model_type":"qwen3","num_attention_heads":%d,"num_hidden_layers":%d,
"num_key_value_heads":8,"rms_norm_eps":1e-06,"rope_scaling":null,"rope_theta":1000000,"sliding_window":null,
"tie_word_embeddings":true,"torch_dtype":"bfloat16","transformers_version":"4.51.0","use_cache":true,
"use_sliding_window":false,"vocab_size":151936}`, hidden, inter, layers, heads, layers)
}

func smolConfig(hidden, inter, layers, heads, kv int, theta float64, bos, eos int) string {
	return fmt.Sprintf(`{"architectures":["LlamaForCausalLM"],"attention_bias":false,"attention_dropout":0.0,"bos_token_id":%d,
"eos_token_id":%d,"hidden_act":"silu","hidden_size":%d,"initializer_range":0.02,"intermediate_size":%d,
"max_position_embeddings":8192,"mlp_bias":false,"model_type":"llama","num_attention_heads":%d,"num_hidden_layers":%d,
"num_key_value_heads":%d,"pretraining_tp":1,"rms_norm_eps":1e-05,"rope_scaling":null,"rope_theta":%g,
"tie_word_embeddings":true,"torch_dtype":"bfloat16","transformers_version":"4.42.3","use_cache":true,"vocab_size":49152}`,
		bos, eos, hidden, inter, heads, layers, kv, theta)
}

const mistralBase = `"attention_dropout":0.0,"bos_token_id":1,"eos_token_id":2,"hidden_act":"silu","hidden_size":4096,
"initializer_range":0.02,"intermediate_size":14336,"max_position_embeddings":32768,"num_attention_heads":32,
"num_hidden_layers":32,"num_key_value_heads":8,"rms_norm_eps":1e-05,"rope_theta":1000000.0,"sliding_window":null,
"tie_word_embeddings":false,"torch_dtype":"bfloat16","use_cache":true`

// UpstreamModels mirrors the first part of mlir-air's
// programming_examples/llms/hf_models.txt (base and instruct Llama 3.2,
// Qwen2.5, Qwen3, SmolLM2, an AWQ int4 repack) plus the families phase0
// must refuse or accept at the edges: Mistral v0.3 (sliding_window null),
// Mixtral (MoE) and Phi-4-mini (unsupported class, partial rotary).
// Configs keep the keys the architecture gate and the extraction read,
// with the values of the real config.json files.
func UpstreamModels() []HubModel {
	return []HubModel{
		{ID: "meta-llama/Llama-3.2-1B", Shards: 1, Gated: true, Want: "pass",
			Config: `{` + llama1b + `,"eos_token_id":128001,"tie_word_embeddings":true}`},
		{ID: "meta-llama/Llama-3.2-1B-Instruct", Shards: 1, Gated: true, Want: "pass",
			Config: `{` + llama1b + `,"eos_token_id":[128001,128008,128009],"tie_word_embeddings":true}`},
		{ID: "meta-llama/Llama-3.2-3B", Shards: 2, Gated: true, Want: "pass",
			Config: `{"architectures":["LlamaForCausalLM"],"attention_bias":false,"attention_dropout":0.0,"bos_token_id":128000,
"eos_token_id":128001,"head_dim":128,"hidden_act":"silu","hidden_size":3072,"initializer_range":0.02,"intermediate_size":8192,
"max_position_embeddings":131072,"mlp_bias":false,"model_type":"llama","num_attention_heads":24,"num_hidden_layers":28,
"num_key_value_heads":8,"pretraining_tp":1,"rms_norm_eps":1e-05,
"rope_scaling":{"factor":32.0,"high_freq_factor":4.0,"low_freq_factor":1.0,"original_max_position_embeddings":8192,"rope_type":"llama3"},
"rope_theta":500000.0,"tie_word_embeddings":true,"torch_dtype":"bfloat16","transformers_version":"4.45.0.dev0","use_cache":true,"vocab_size":128256}`},
		{ID: "Qwen/Qwen2.5-0.5B", Shards: 1, Want: "pass", Config: `{` + qwen05 + `,"eos_token_id":151643}`},
		{ID: "Qwen/Qwen2.5-0.5B-Instruct", Shards: 1, Want: "pass", Config: `{` + qwen05 + `,"eos_token_id":151645}`},
		{ID: "Qwen/Qwen2.5-1.5B", Shards: 1, Want: "pass",
			Config: `{"architectures":["Qwen2ForCausalLM"],"attention_dropout":0.0,"bos_token_id":151643,"eos_token_id":151643,
"hidden_act":"silu","hidden_size":1536,"initializer_range":0.02,"intermediate_size":8960,"max_position_embeddings":131072,
"max_window_layers":28,"model_type":"qwen2","num_attention_heads":12,"num_hidden_layers":28,"num_key_value_heads":2,
"rms_norm_eps":1e-06,"rope_theta":1000000.0,"sliding_window":131072,"tie_word_embeddings":true,"torch_dtype":"bfloat16",
"use_cache":true,"use_sliding_window":false,"vocab_size":151936}`},
		{ID: "Qwen/Qwen2.5-3B", Shards: 2, Want: "pass",
			Config: `{"architectures":["Qwen2ForCausalLM"],"attention_dropout":0.0,"bos_token_id":151643,"eos_token_id":151643,
"hidden_act":"silu","hidden_size":2048,"initializer_range":0.02,"intermediate_size":11008,"max_position_embeddings":32768,
"max_window_layers":70,"model_type":"qwen2","num_attention_heads":16,"num_hidden_layers":36,"num_key_value_heads":2,
"rms_norm_eps":1e-06,"rope_theta":1000000.0,"sliding_window":32768,"tie_word_embeddings":true,"torch_dtype":"bfloat16",
"use_cache":true,"use_sliding_window":false,"vocab_size":151936}`},
		{ID: "Qwen/Qwen3-0.6B", Shards: 1, Want: "pass", Config: qwen3Config(1024, 3072, 28, 16)},
		{ID: "Qwen/Qwen3-1.7B", Shards: 2, Want: "pass", Config: qwen3Config(2048, 6144, 28, 16)},
		{ID: "Qwen/Qwen3-4B", Shards: 3, Want: "pass", Config: qwen3Config(2560, 9728, 36, 32)},
		{ID: "HuggingFaceTB/SmolLM2-1.7B", Shards: 1, Want: "pass", Config: smolConfig(2048, 8192, 24, 32, 32, 130000, 0, 0)},
		{ID: "HuggingFaceTB/SmolLM2-135M-Instruct", Shards: 1, Want: "pass", Config: smolConfig(576, 1536, 30, 9, 3, 100000, 1, 2)},
		// An AWQ repack: int4 qweight/qzeros plus scales where bf16 weights
		// should be. Its config.json says so (quantization_config), so the
		// architecture gate refuses it before a weight header is read.
		{ID: "amd/Llama-3.2-1B-Instruct-awq-uint4-asym-g128-bf16-lmhead", Shards: 1, Want: "reject:quantized",
			Config: `{` + llama1b + `,"eos_token_id":[128001,128008,128009],"tie_word_embeddings":false,
"quantization_config":{"bits":4,"group_size":128,"quant_method":"awq","version":"gemm","zero_point":true}}`},
		{ID: "mistralai/Mistral-7B-v0.3", Shards: 3, Gated: true, Want: "pass",
			Config: `{"architectures":["MistralForCausalLM"],"model_type":"mistral",` + mistralBase + `,"vocab_size":32768}`},
		{ID: "mistralai/Mixtral-8x7B-v0.1", Shards: 19, Want: "reject:unsupported_architecture,moe",
			Config: `{"architectures":["MixtralForCausalLM"],"model_type":"mixtral",` + mistralBase +
				`,"num_experts_per_tok":2,"num_local_experts":8,"output_router_logits":false,"router_aux_loss_coef":0.02,"vocab_size":32000}`},
		{ID: "microsoft/Phi-4-mini-instruct", Shards: 2, Want: "reject:unsupported_architecture,partial_rotary",
			Config: `{"architectures":["Phi3ForCausalLM"],"attention_bias":false,"attention_dropout":0.0,"bos_token_id":199999,
"eos_token_id":199999,"full_attn_mod":1,"hidden_act":"silu","hidden_size":3072,"initializer_range":0.02,"intermediate_size":8192,
"interpolate_factor":1,"lm_head_bias":false,"max_position_embeddings":131072,"mlp_bias":false,"model_type":"phi3",
"num_attention_heads":24,"num_hidden_layers":32,"num_key_value_heads":8,"original_max_position_embeddings":4096,
"pad_token_id":199999,"partial_rotary_factor":0.75,"resid_pdrop":0.0,"rms_norm_eps":1e-05,"rope_theta":10000.0,
"sliding_window":262144,"tie_word_embeddings":true,"torch_dtype":"bfloat16","use_cache":true,"vocab_size":200064}`},
	}
}

// layoutConfig is the part of config.json the checkpoint layout follows.
type layoutConfig struct {
	ModelType string `json:"model_type"`
	Hidden    int64  `json:"hidden_size"`
	Inter     int64  `json:"intermediate_size"`
	Layers    int    `json:"num_hidden_layers"`
	Heads     int64  `json:"num_attention_heads"`
	KVHeads   int64  `json:"num_key_value_heads"`
	HeadDim   int64  `json:"head_dim"`
	Vocab     int64  `json:"vocab_size"`
	Tied      bool   `json:"tie_word_embeddings"`
	Experts   int    `json:"num_local_experts"`
	Quant     *struct {
		GroupSize int64 `json:"group_size"`
	} `json:"quantization_config"`
}

type layoutTensor struct {
	name  string
	dtype string
	shape []int64
}

func (t layoutTensor) bytes() int64 {
	n := int64(2)
	if t.dtype == "I32" {
		n = 4
	}
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// tensors lists the checkpoint's tensors in the order transformers' model
// defines them, which is how save_pretrained fills the shards.
func (c layoutConfig) tensors() []layoutTensor {
	hd := c.HeadDim
	if hd == 0 {
		hd = c.Hidden / c.Heads
	}
	h, q, kv := c.Hidden, c.Heads*hd, c.KVHeads*hd
	var out []layoutTensor
	bf := func(name string, shape ...int64) { out = append(out, layoutTensor{name, "BF16", shape}) }
	linear := func(name string, out_, in int64) {
		if c.Quant == nil {
			bf(name+".weight", out_, in)
			return
		}
		// AutoAWQ's GEMM layout: (in, out/8) packed int4, zeros per group, scales per group.
		g := c.Quant.GroupSize
		out = append(out, layoutTensor{name + ".qweight", "I32", []int64{in, out_ / 8}},
			layoutTensor{name + ".qzeros", "I32", []int64{in / g, out_ / 8}},
			layoutTensor{name + ".scales", "BF16", []int64{in / g, out_}})
	}
	bf("model.embed_tokens.weight", c.Vocab, h)
	for i := 0; i < c.Layers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		bf(p+"input_layernorm.weight", h)
		if c.ModelType == "phi3" {
			bf(p+"self_attn.qkv_proj.weight", q+2*kv, h)
			bf(p+"self_attn.o_proj.weight", h, q)
		} else {
			linear(p+"self_attn.q_proj", q, h)
			linear(p+"self_attn.k_proj", kv, h)
			linear(p+"self_attn.v_proj", kv, h)
			linear(p+"self_attn.o_proj", h, q)
		}
		if c.ModelType == "qwen2" {
			bf(p+"self_attn.q_proj.bias", q)
			bf(p+"self_attn.k_proj.bias", kv)
			bf(p+"self_attn.v_proj.bias", kv)
		}
		if c.ModelType == "qwen3" {
			bf(p+"self_attn.q_norm.weight", hd)
			bf(p+"self_attn.k_norm.weight", hd)
		}
		bf(p+"post_attention_layernorm.weight", h)
		switch {
		case c.Experts > 0:
			bf(p+"block_sparse_moe.gate.weight", int64(c.Experts), h)
			for e := 0; e < c.Experts; e++ {
				ep := fmt.Sprintf("%sblock_sparse_moe.experts.%d.", p, e)
				bf(ep+"w1.weight", c.Inter, h)
				bf(ep+"w2.weight", h, c.Inter)
				bf(ep+"w3.weight", c.Inter, h)
			}
		case c.ModelType == "phi3":
			bf(p+"mlp.gate_up_proj.weight", 2*c.Inter, h)
			bf(p+"mlp.down_proj.weight", h, c.Inter)
		default:
			linear(p+"mlp.gate_proj", c.Inter, h)
			linear(p+"mlp.up_proj", c.Inter, h)
			linear(p+"mlp.down_proj", h, c.Inter)
		}
	}
	bf("model.norm.weight", h)
	if !c.Tied {
		bf("lm_head.weight", c.Vocab, h)
	}
	return out
}

// Repo builds the model's fake repository at commit: config.json as a
// regular file, the safetensors files as sparse files whose headers are
// real and whose sizes are the real checkpoint's.
func (m HubModel) Repo(commit string) (*FakeRepo, error) {
	var c layoutConfig
	if err := json.Unmarshal([]byte(m.Config), &c); err != nil {
		return nil, fmt.Errorf("%s: config: %w", m.ID, err)
	}
	ts := c.tensors()
	repo := &FakeRepo{ID: m.ID, Refs: map[string]string{"main": commit},
		Files: map[string][]byte{"config.json": []byte(m.Config), "README.md": []byte("# " + m.ID + "\n")}, Sparse: map[string]SparseFile{}}
	if m.Gated {
		repo.Gated, repo.Tokens = true, []string{HubToken}
	}
	if m.Shards <= 1 {
		sf, err := sparseSafetensors(ts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.ID, err)
		}
		repo.Sparse["model.safetensors"] = sf
		return repo, nil
	}
	var total int64
	for _, t := range ts {
		total += t.bytes()
	}
	// Fill shards in order up to an even share of the bytes, as
	// save_pretrained's max_shard_size does.
	share := total/int64(m.Shards) + 1
	groups := make([][]layoutTensor, m.Shards)
	var acc int64
	for _, t := range ts {
		k := min(int(acc/share), m.Shards-1)
		groups[k] = append(groups[k], t)
		acc += t.bytes()
	}
	weightMap := map[string]string{}
	for k, g := range groups {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", k+1, m.Shards)
		sf, err := sparseSafetensors(g)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", m.ID, name, err)
		}
		repo.Sparse[name] = sf
		for _, t := range g {
			weightMap[t.name] = name
		}
	}
	ix, err := json.MarshalIndent(map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}, "", "  ")
	if err != nil {
		return nil, err
	}
	repo.Files["model.safetensors.index.json"] = ix
	return repo, nil
}

// sparseSafetensors writes the header safetensors' serializer would (keys
// sorted, data laid out in key order, padded with spaces to 8 bytes) and
// declares the full file size.
func sparseSafetensors(ts []layoutTensor) (SparseFile, error) {
	sorted := slices.Clone(ts)
	slices.SortFunc(sorted, func(a, b layoutTensor) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var off int64
	for _, t := range sorted {
		header[t.name] = map[string]any{"dtype": t.dtype, "shape": t.shape, "data_offsets": []int64{off, off + t.bytes()}}
		off += t.bytes()
	}
	hj, err := json.Marshal(header) // encoding/json sorts map keys
	if err != nil {
		return SparseFile{}, err
	}
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(hj)))
	b.Write(hj)
	return SparseFile{Prefix: b.Bytes(), Size: int64(b.Len()) + off}, nil
}

// HubCommit is a stable fake commit sha for a repository id.
func HubCommit(id string) string {
	sum := sha1.Sum([]byte("commit\x00" + id))
	return hex.EncodeToString(sum[:])
}

// UpstreamRepos builds every UpstreamModels repository at HubCommit(id).
func UpstreamRepos() ([]*FakeRepo, error) {
	var out []*FakeRepo
	for _, m := range UpstreamModels() {
		r, err := m.Repo(HubCommit(m.ID))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
