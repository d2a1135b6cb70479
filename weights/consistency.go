package weights

import (
	"fmt"
	"regexp"
	"strconv"

	"phase0/model"
	"phase0/safetensors"
)

// Finding is a config value that disagrees with what the checkpoint implies.
type Finding struct {
	Field   string `json:"field"`
	Source  string `json:"source"` // "weights" here; "generated_config" from the Python gate
	Config  any    `json:"config"`
	Actual  any    `json:"actual"`
	Message string `json:"message"`
}

// Consistency is gates.config_consistency in the report.
type Consistency struct {
	Status     string    `json:"status"`
	Checked    []string  `json:"checked"`
	Mismatches []Finding `json:"mismatches"`
}

// NewConsistency returns an empty passing section.
func NewConsistency() *Consistency {
	return &Consistency{Status: StatusPass, Checked: []string{}, Mismatches: []Finding{}}
}

// Add records a finding and fails the section.
func (c *Consistency) Add(f Finding) {
	c.Mismatches = append(c.Mismatches, f)
	c.Status = StatusFail
}

var layerIndex = regexp.MustCompile(`^model\.layers\.(\d+)\.`)

// CrossCheck derives sizes from tensor shapes and compares them with the config.
// Each disagreement names the field, the config value and the checkpoint's.
func CrossCheck(cfg *model.Config, inv *safetensors.Inventory) *Consistency {
	c := NewConsistency()
	shape := func(name string) []int64 {
		if t, ok := inv.Tensors[name]; ok {
			return t.Shape
		}
		return nil
	}
	check := func(field string, want, got int64, how string) {
		c.Checked = append(c.Checked, field)
		if want != got {
			c.Add(Finding{Field: field, Source: "weights", Config: want, Actual: got,
				Message: fmt.Sprintf("config.json gives %s %d but %s implies %d", field, want, how, got)})
		}
	}

	if s := shape("model.embed_tokens.weight"); len(s) == 2 {
		check("vocab_size", int64(cfg.VocabSize), s[0], "model.embed_tokens.weight rows")
		check("emb_dim", int64(cfg.EmbDim), s[1], "model.embed_tokens.weight columns")
	}

	layers := map[int]bool{}
	maxLayer := -1
	for name := range inv.Tensors {
		if m := layerIndex.FindStringSubmatch(name); m != nil {
			if i, err := strconv.Atoi(m[1]); err == nil {
				layers[i] = true
				maxLayer = max(maxLayer, i)
			}
		}
	}
	if len(layers) > 0 {
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

	if len(layers) > 0 {
		c.Checked = append(c.Checked, "qkv_bias")
		_, hasBias := inv.Tensors[l0+"self_attn.q_proj.bias"]
		if hasBias != cfg.QKVBias {
			c.Add(Finding{Field: "qkv_bias", Source: "weights", Config: cfg.QKVBias, Actual: hasBias,
				Message: fmt.Sprintf("the config decides qkv_bias=%v but %sself_attn.q_proj.bias is %s", cfg.QKVBias, l0, presence(hasBias))})
		}
		c.Checked = append(c.Checked, "qk_norm")
		_, hasNorm := inv.Tensors[l0+"self_attn.q_norm.weight"]
		if hasNorm != cfg.QKNorm {
			c.Add(Finding{Field: "qk_norm", Source: "weights", Config: cfg.QKNorm, Actual: hasNorm,
				Message: fmt.Sprintf("the family decides qk_norm=%v but %sself_attn.q_norm.weight is %s", cfg.QKNorm, l0, presence(hasNorm))})
		}
	}

	c.Checked = append(c.Checked, "tie_word_embeddings")
	_, hasHead := inv.Tensors["lm_head.weight"]
	switch {
	case cfg.TieWordEmbeddings && hasHead:
		c.Add(Finding{Field: "tie_word_embeddings", Source: "weights", Config: true, Actual: false,
			Message: "tie_word_embeddings is true but the checkpoint has its own lm_head.weight, which transformers would discard in favour of the embeddings"})
	case !cfg.TieWordEmbeddings && !hasHead:
		c.Add(Finding{Field: "tie_word_embeddings", Source: "weights", Config: false, Actual: true,
			Message: "tie_word_embeddings is false but lm_head.weight is absent: a loader that falls back to the embeddings would silently produce wrong logits"})
	}
	return c
}

func presence(b bool) string {
	if b {
		return "present"
	}
	return "absent"
}
