package config

import (
	"encoding/json"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/read/model"
	"phase0/wire"
)

func TestGeneratedFieldTypes(t *testing.T) {
	cfg := &model.Config{NLayers: 2, EmbDim: 64, NHeads: 4, NKVHeads: 2, HeadDim: 16, HiddenDim: 128, VocabSize: 512,
		RopeBase: 10000, RMSNormEps: 1e-5, HiddenAct: "silu", TieWordEmbeddings: true}
	good := map[string]string{"n_layers": "2", "emb_dim": "64", "n_heads": "4", "n_kv_heads": "2", "head_dim": "16",
		"hidden_dim": "128", "vocab_size": "512", "rope_base": "10000.0", "rms_norm_eps": "1e-05",
		"tie_word_embeddings": "true", "dtype": `"bfloat16"`}
	for _, tc := range []struct {
		field, value string // "" value: delete the field
		want         string // "" = pass
	}{
		{"", "", ""},
		{"n_layers", "2.0", "not an integer"},
		{"tie_word_embeddings", "1", "not a bool"},
		{"rope_base", "500000.0", "rope_base is 500000.0"},
		{"qkv_bias", "true", "qkv_bias is true"},
		{"rope_scaling", `{"rope_type": "default"}`, ""},
		{"rope_scaling", `{"rope_type": "linear", "factor": 2.0}`, "rope_scaling"},
		{"vocab_size", "", "has no field vocab_size"},
	} {
		fields := map[string]json.RawMessage{}
		for k, v := range good {
			fields[k] = json.RawMessage(v)
		}
		if tc.field != "" {
			if tc.value == "" {
				delete(fields, tc.field)
			} else {
				fields[tc.field] = json.RawMessage(tc.value)
			}
		}
		c := New()
		if err := c.Generated(cfg, &wire.GeneratedFacts{Class: "LlamaConfig", Fields: fields}, Module{File: "x_weights.py", Generated: true}); err != nil {
			t.Fatal(err)
		}
		text := strings.Join(c.Findings, "\n")
		if (tc.want == "") != (c.Status == verdict.Pass) || (tc.want != "" && !strings.Contains(text, tc.want)) {
			t.Errorf("%s=%s: status %s, findings %q, want %q", tc.field, tc.value, c.Status, text, tc.want)
		}
	}
}
