package weights

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"phase0/gate/config"
	"phase0/gate/verdict"
	"phase0/internal/sttest"
	"phase0/read/model"
	"phase0/read/safetensors"
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
func writeCheckpoint(t *testing.T, cfg *model.Config, edit func([]sttest.WriteTensor) []sttest.WriteTensor) (*safetensors.Inventory, fs.FS) {
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
	fsys := os.DirFS(dir)
	inv, err := safetensors.Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return inv, fsys
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
		inv, fsys := writeCheckpoint(t, cfg, nil)
		res := Check(cfg, inv)
		if res.Status != verdict.Pass || res.Tensors != len(model.ExpectedTensors(cfg)) {
			t.Errorf("%+v: %+v", cfg, res)
		}
		if cc := config.CrossCheck(cfg, inv, fsys); cc.Status != verdict.Pass {
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
			check: func(r *Result) bool { return r.Status == verdict.Pass && len(r.Harmless) == 1 }},
		{name: "quantized dtype", cfg: tinyConfig(nil), edit: func(ts []sttest.WriteTensor) []sttest.WriteTensor {
			ts[1].DType = "I8"
			ts[1].Data = ts[1].Data[:len(ts[1].Data)/2]
			return ts
		}, check: func(r *Result) bool { return len(r.Mismatched) == 1 && strings.Contains(r.Mismatched[0].Actual, "I8") }},
		{name: "untied config without lm_head", cfg: tinyConfig(nil), edit: drop("lm_head.weight"),
			check: func(r *Result) bool { return len(r.Missing) == 1 }, cross: []string{"tie_word_embeddings"}},
		{name: "tied config with an identical lm_head is harmless", cfg: tinyConfig(func(c *model.Config) { c.TieWordEmbeddings = true }), ckpt: tinyConfig(nil),
			check: func(r *Result) bool {
				return r.Status == verdict.Pass && slices.Equal(r.Harmless, []string{"lm_head.weight"})
			}},
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
			inv, fsys := writeCheckpoint(t, ck, tt.edit)
			res := Check(tt.cfg, inv)
			if !tt.check(res) {
				t.Errorf("unexpected result %+v", res)
			}
			if !strings.Contains(tt.name, "harmless") && res.Status != verdict.Fail {
				t.Errorf("status %s, want FAIL", res.Status)
			}
			cc := config.CrossCheck(tt.cfg, inv, fsys)
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

// fill gives every byte of a tensor a value derived from its name, so two
// tensors differ unless written from the same name.
func fill(name string) func([]sttest.WriteTensor) []sttest.WriteTensor {
	return func(ts []sttest.WriteTensor) []sttest.WriteTensor {
		for i := range ts {
			if ts[i].Name == name {
				for j := range ts[i].Data {
					ts[i].Data[j] = byte(j*7 + len(name))
				}
			}
		}
		return ts
	}
}

func TestTiedConfigWithLMHead(t *testing.T) {
	tied := tinyConfig(func(c *model.Config) { c.TieWordEmbeddings = true })
	untied := tinyConfig(nil)
	for _, tc := range []struct {
		name   string
		edit   func([]sttest.WriteTensor) []sttest.WriteTensor
		status verdict.Status
		want   string
	}{
		{"identical bytes", func(ts []sttest.WriteTensor) []sttest.WriteTensor {
			// Both tensors get the same bytes, as converters that write both do.
			ts = fill("model.embed_tokens.weight")(ts)
			for i := range ts {
				if ts[i].Name == "lm_head.weight" {
					for j := range ts[i].Data {
						ts[i].Data[j] = byte(j*7 + len("model.embed_tokens.weight"))
					}
				}
			}
			return ts
		}, verdict.Pass, "byte-identical copy"},
		{"different bytes", fill("lm_head.weight"), verdict.Fail, "transformers will ignore the checkpoint's lm_head"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv, fsys := writeCheckpoint(t, untied, tc.edit)
			if res := Check(tied, inv); res.Status != verdict.Pass {
				t.Errorf("weights gate %s: %v", res.Status, res.Findings)
			}
			cc := config.CrossCheck(tied, inv, fsys)
			text := strings.Join(append(append([]string{}, cc.Notes...), cc.Findings...), "\n")
			if cc.Status != tc.status || !strings.Contains(text, tc.want) {
				t.Errorf("consistency %s, notes and findings:\n%s\nwant %s mentioning %q", cc.Status, text, tc.status, tc.want)
			}
		})
	}
}
