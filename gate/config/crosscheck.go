package config

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"phase0/read/model"
	"phase0/read/safetensors"
)

// layerIndex returns i for a name model.layers.<i>.…; no regexp, because
// it runs once per tensor and checkpoints reach tens of thousands.
func layerIndex(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "model.layers.")
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, ".")
	if !ok || digits == "" || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	i, err := strconv.Atoi(digits)
	return i, err == nil && i >= 0
}

// CrossCheck derives sizes from tensor shapes and compares them with the
// config. Each disagreement names the field, the config value and the
// checkpoint's. fsys is the model folder: a tied config whose checkpoint
// also holds lm_head.weight has exactly those two tensors read and compared
// (nil fsys: headers only, e.g. a remote inspection; the pair is noted).
func CrossCheck(cfg *model.Config, inv *safetensors.Inventory, fsys fs.FS) *Consistency {
	c := New()
	c.source(SourceWeights)
	shape := func(name string) []int64 {
		if t, ok := inv.Tensor(name); ok {
			return t.Shape
		}
		return nil
	}
	check := func(field string, want, got int64, how string) {
		c.check(SourceWeights, field)
		if want != got {
			c.add(Finding{Field: field, Source: SourceWeights, Config: want, Actual: got,
				Message: fmt.Sprintf("config.json gives %s %d but %s implies %d", field, want, how, got)})
		}
	}

	if s := shape("model.embed_tokens.weight"); len(s) == 2 {
		check("vocab_size", int64(cfg.VocabSize), s[0], "model.embed_tokens.weight rows")
		check("emb_dim", int64(cfg.EmbDim), s[1], "model.embed_tokens.weight columns")
	}

	maxLayer := -1
	for _, t := range inv.Tensors() {
		if i, ok := layerIndex(t.Name); ok {
			maxLayer = max(maxLayer, i)
		}
	}
	if maxLayer >= 0 {
		check("n_layers", int64(cfg.NLayers), int64(maxLayer+1), "the highest layer index + 1")
	}

	const l0 = "model.layers.0."
	headDim := int64(cfg.HeadDim)
	if s := shape(l0 + "self_attn.q_norm.weight"); len(s) == 1 {
		check("head_dim", headDim, s[0], l0+"self_attn.q_norm.weight length")
		headDim = s[0]
	} else if s := shape(l0 + "self_attn.q_proj.weight"); len(s) == 2 && cfg.NHeads > 0 && s[0]%int64(cfg.NHeads) == 0 {
		check("head_dim", headDim, s[0]/int64(cfg.NHeads), l0+"self_attn.q_proj.weight rows / n_heads")
		headDim = s[0] / int64(cfg.NHeads)
	}
	if s := shape(l0 + "self_attn.k_proj.weight"); len(s) == 2 && headDim > 0 && s[0]%headDim == 0 {
		check("n_kv_heads", int64(cfg.NKVHeads), s[0]/headDim, l0+"self_attn.k_proj.weight rows / head_dim")
	}
	if s := shape(l0 + "mlp.gate_proj.weight"); len(s) == 2 {
		check("hidden_dim", int64(cfg.HiddenDim), s[0], l0+"mlp.gate_proj.weight rows")
	}

	if maxLayer >= 0 {
		c.check(SourceWeights, "qkv_bias")
		hasBias := inv.Has(l0 + "self_attn.q_proj.bias")
		if hasBias != cfg.QKVBias {
			c.add(Finding{Field: "qkv_bias", Source: SourceWeights, Config: cfg.QKVBias, Actual: hasBias,
				Message: fmt.Sprintf("the config decides qkv_bias=%v but %sself_attn.q_proj.bias is %s", cfg.QKVBias, l0, presence(hasBias))})
		}
		c.check(SourceWeights, "qk_norm")
		hasNorm := inv.Has(l0 + "self_attn.q_norm.weight")
		if hasNorm != cfg.QKNorm {
			c.add(Finding{Field: "qk_norm", Source: SourceWeights, Config: cfg.QKNorm, Actual: hasNorm,
				Message: fmt.Sprintf("the family decides qk_norm=%v but %sself_attn.q_norm.weight is %s", cfg.QKNorm, l0, presence(hasNorm))})
		}
	}

	c.check(SourceWeights, "tie_word_embeddings")
	head, hasHead := inv.Tensor("lm_head.weight")
	switch {
	case cfg.TieWordEmbeddings && hasHead:
		tiedHead(c, inv, head, fsys)
	case !cfg.TieWordEmbeddings && !hasHead:
		c.add(Finding{Field: "tie_word_embeddings", Source: SourceWeights, Config: false, Actual: true,
			Message: "tie_word_embeddings is false but lm_head.weight is absent: a loader that falls back to the embeddings would silently produce wrong logits"})
	}
	return c
}

// tiedHead handles a tied config whose checkpoint also stores lm_head.weight,
// as several converters write it: harmless when it is a byte-identical copy
// of the embeddings, wrong when it differs, because transformers ties the
// head to the embeddings and ignores the checkpoint's lm_head.
func tiedHead(c *Consistency, inv *safetensors.Inventory, head safetensors.Tensor, fsys fs.FS) {
	emb, ok := inv.Tensor("model.embed_tokens.weight")
	if !ok {
		return // the weights gate reports the missing embeddings
	}
	if fsys == nil {
		c.Notes = append(c.Notes, "tie_word_embeddings is true and the checkpoint also stores lm_head.weight; only headers were read, so whether it equals the embeddings is not known (transformers would use the embeddings)")
		return
	}
	same, err := safetensors.SameBytes(fsys, emb, head)
	if err != nil {
		c.add(Finding{Field: "tie_word_embeddings", Source: SourceWeights, Config: true, Actual: nil,
			Message: "tie_word_embeddings is true and the checkpoint has its own lm_head.weight, which could not be compared with the embeddings: " + err.Error()})
		return
	}
	if same {
		c.Notes = append(c.Notes, "tie_word_embeddings is true and the checkpoint also stores lm_head.weight: it is a byte-identical copy of model.embed_tokens.weight, so tying changes nothing")
		return
	}
	c.add(Finding{Field: "tie_word_embeddings", Source: SourceWeights, Config: true, Actual: false,
		Message: "tie_word_embeddings is true but the checkpoint's lm_head.weight differs from model.embed_tokens.weight: transformers will ignore the checkpoint's lm_head and use the embeddings"})
}

func presence(b bool) string {
	if b {
		return "present"
	}
	return "absent"
}
