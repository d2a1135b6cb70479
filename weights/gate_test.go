package weights

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/internal/sttest"
	"phase0/model"
	"phase0/safetensors"
)

func tinyConfig(mut func(*model.Config)) *model.Config {
	c := &model.Config{NLayers: 2, EmbDim: 64, NHeads: 4, NKVHeads: 2, HeadDim: 16, HiddenDim: 128, VocabSize: 512,
		RopeBase: 10000, RMSNormEps: 1e-6, HiddenAct: "silu", DType: "bfloat16"}
	if mut != nil {
		mut(c)
	}
	return c
}

// writeCheckpoint writes a real single-file checkpoint for cfg, letting edit
// change the tensor list first, and returns its inventory.
func writeCheckpoint(t *testing.T, cfg *model.Config, edit func([]sttest.WriteTensor) []sttest.WriteTensor) *safetensors.Inventory {
	t.Helper()
	var ts []sttest.WriteTensor
	for _, s := range model.ExpectedTensors(cfg) {
		n := int64(2)
		for _, d := range s.Shape {
			n *= d
		}
		ts = append(ts, sttest.WriteTensor{Name: s.Name, DType: "BF16", Shape: s.Shape, Data: make([]byte, n)})
	}
	if edit != nil {
		ts = edit(ts)
	}
	dir := t.TempDir()
	if err := sttest.WriteFile(filepath.Join(dir, "model.safetensors"), ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	inv, err := safetensors.Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func drop(name string) func([]sttest.WriteTensor) []sttest.WriteTensor {
	return func(ts []sttest.WriteTensor) []sttest.WriteTensor {
		out := ts[:0]
		for _, t := range ts {
			if t.Name != name {
				out = append(out, t)
			}
		}
		return out
	}
}

func add(name, dtype string, shape ...int64) func([]sttest.WriteTensor) []sttest.WriteTensor {
	return func(ts []sttest.WriteTensor) []sttest.WriteTensor {
		n, _ := safetensors.DTypeSize(dtype)
		for _, d := range shape {
			n *= d
		}
		return append(ts, sttest.WriteTensor{Name: name, DType: dtype, Shape: shape, Data: make([]byte, n)})
	}
}

func TestCheckMatchingCheckpointPasses(t *testing.T) {
	for _, mut := range []func(*model.Config){nil,
		func(c *model.Config) { c.QKVBias = true },
		func(c *model.Config) { c.QKNorm = true; c.HeadDim = 32; c.TieWordEmbeddings = true },
	} {
		cfg := tinyConfig(mut)
		inv := writeCheckpoint(t, cfg, nil)
		res := Check(cfg, inv)
		if res.Status != StatusPass || res.Tensors != len(model.ExpectedTensors(cfg)) {
			t.Errorf("%+v: %+v", cfg, res)
		}
		if cc := CrossCheck(cfg, inv); cc.Status != StatusPass {
			t.Errorf("%+v: consistency %+v", cfg, cc.Mismatches)
		}
	}
}

func TestCheckFindings(t *testing.T) {
	tests := []struct {
		name  string
		cfg   *model.Config
		ckpt  *model.Config // the config the checkpoint was written from; nil = cfg
		edit  func([]sttest.WriteTensor) []sttest.WriteTensor
		check func(*Result) bool
		cross []string // fields expected in config_consistency findings
	}{
		{name: "missing tensor", cfg: tinyConfig(nil), edit: drop("model.layers.1.mlp.up_proj.weight"),
			check: func(r *Result) bool {
				return len(r.Missing) == 1 && r.Missing[0] == "model.layers.1.mlp.up_proj.weight"
			}},
		{name: "unexpected tensor", cfg: tinyConfig(nil), edit: add("model.layers.0.mlp.extra.weight", "BF16", 4),
			check: func(r *Result) bool { return len(r.Unexpected) == 1 }},
		{name: "inv_freq is harmless", cfg: tinyConfig(nil), edit: add("model.layers.0.self_attn.rotary_emb.inv_freq", "F32", 8),
			check: func(r *Result) bool { return r.Status == StatusPass && len(r.Harmless) == 1 }},
		{name: "quantized dtype", cfg: tinyConfig(nil), edit: func(ts []sttest.WriteTensor) []sttest.WriteTensor {
			ts[1].DType = "I8"
			ts[1].Data = ts[1].Data[:len(ts[1].Data)/2]
			return ts
		}, check: func(r *Result) bool { return len(r.Mismatched) == 1 && strings.Contains(r.Mismatched[0].Actual, "I8") }},
		{name: "untied config without lm_head", cfg: tinyConfig(nil), edit: drop("lm_head.weight"),
			check: func(r *Result) bool { return len(r.Missing) == 1 }, cross: []string{"tie_word_embeddings"}},
		{name: "tied config with lm_head", cfg: tinyConfig(func(c *model.Config) { c.TieWordEmbeddings = true }), ckpt: tinyConfig(nil),
			check: func(r *Result) bool { return len(r.Unexpected) == 1 && r.Unexpected[0] == "lm_head.weight" }, cross: []string{"tie_word_embeddings"}},
		{name: "head_dim wrong in config", cfg: tinyConfig(func(c *model.Config) { c.HeadDim = 8 }), ckpt: tinyConfig(nil),
			check: func(r *Result) bool { return len(r.Mismatched) > 0 }, cross: []string{"head_dim"}},
		{name: "kv heads wrong in config", cfg: tinyConfig(func(c *model.Config) { c.NKVHeads = 4 }), ckpt: tinyConfig(nil),
			check: func(r *Result) bool { return len(r.Mismatched) == 4 }, cross: []string{"n_kv_heads"}},
		{name: "bias present but not configured", cfg: tinyConfig(nil), ckpt: tinyConfig(func(c *model.Config) { c.QKVBias = true }),
			check: func(r *Result) bool { return len(r.Unexpected) == 6 }, cross: []string{"qkv_bias"}},
		{name: "vocab and layers wrong", cfg: tinyConfig(func(c *model.Config) { c.VocabSize = 1000; c.NLayers = 3 }), ckpt: tinyConfig(nil),
			check: func(r *Result) bool { return len(r.Missing) == 9 }, cross: []string{"vocab_size", "n_layers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ck := tt.ckpt
			if ck == nil {
				ck = tt.cfg
			}
			inv := writeCheckpoint(t, ck, tt.edit)
			res := Check(tt.cfg, inv)
			if !tt.check(res) {
				t.Errorf("unexpected result %+v", res)
			}
			if tt.name != "inv_freq is harmless" && res.Status != StatusFail {
				t.Errorf("status %s, want FAIL", res.Status)
			}
			cc := CrossCheck(tt.cfg, inv)
			var fields []string
			for _, f := range cc.Mismatches {
				fields = append(fields, f.Field)
				if f.Message == "" {
					t.Errorf("finding without message: %+v", f)
				}
			}
			if strings.Join(fields, ",") != strings.Join(tt.cross, ",") {
				t.Errorf("consistency fields %v, want %v (%+v)", fields, tt.cross, cc.Mismatches)
			}
		})
	}
}
