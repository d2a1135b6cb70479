package modelrun

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/output/report"
	"phase0/run/orchestrator"
)

// TestQuantizedTree: a quantized folder of an upstream-style tree, its
// bundle and both references read offline from an HF cache. The bundle's
// id validates every MODEL_CHOICES key, each with its own record outside
// the tree: the instruct key PASSes quantized gates 1 and 3 with every
// tensor judged; the base key FAILs the pairing naming the Instruct source
// and the key that pairs it. Each negative bundle FAILs gate 1 naming the
// layer and the tensor. The tree is byte for byte as it was.
func TestQuantizedTree(t *testing.T) {
	t.Parallel()
	fx := testenv.QuantFixtures(t)
	llms := quantTree(t)
	cache := t.TempDir()
	hub := func(t *testing.T, bundle string) func(string) string {
		return testenv.OfflineHub(t, map[string]string{
			llamaInstr: filepath.Join(fx, "ref"),
			llamaBase:  filepath.Join(fx, "other"),
			bundleID:   fastflowlmRepo(t, fx, bundle, llamaInstr),
		})
	}
	settings := func(t *testing.T, env func(string) string, name string) *orchestrator.Settings {
		s := settingsFor(t, llms)
		s.Env, s.Name, s.CacheDir = env, name, cache
		return s
	}
	sameTree := func(t *testing.T, before map[string]string) { t.Helper(); testenv.SameTreeAs(t, llms, before) }

	t.Run("the bundle id validates every key", func(t *testing.T) {
		before := testenv.SnapshotTree(t, llms)
		r := Run(context.Background(), settings(t, hub(t, "clean"), ""), bundleID, "test")
		sameTree(t, before)
		// Each key's folder loader ran once: quantized gate 2 patched in
		// what gate 1 kept (two keys, two runs of the loader, not four);
		// where gate 1 failed (the base key: another checkpoint's weights),
		// gate 2 says why it did not run.
		for _, k := range append([]*report.Report{r}, r.Keys...) {
			e, w := k.Gates.QuantE2E, k.Gates.QuantWeights
			switch {
			case e == nil || w == nil:
				t.Errorf("a key without quantized gates 1 and 2: %+v %+v", w, e)
			case w.Status == verdict.Fail && (e.Status != verdict.Skip || !strings.Contains(e.Summary, "quantized gate 1 failed")):
				t.Errorf("gate 1 failed, yet quantized gate 2 is %s: %+v", e.Status, e)
			case w.Status != verdict.Fail && !e.FromGate1:
				t.Errorf("quantized gate 2 did not take gate 1's tensors: %+v", e)
			}
		}
		keys := map[string]*report.Report{}
		for _, k := range append([]*report.Report{r}, r.Keys...) {
			if k.Quantized == nil {
				b, _ := r.JSON()
				t.Fatalf("a key's report names no quantized key:\n%s", b)
			}
			keys[k.Quantized.Key] = k
		}
		inst, base := keys["instruct"], keys["base"]
		if inst == nil || base == nil || len(keys) != 2 {
			t.Fatalf("keys %v, want base and instruct", keys)
		}
		if r.Status != verdict.Fail {
			t.Errorf("the command's status %s, want FAIL (the base key's pairing)", r.Status)
		}
		g := inst.Gates
		if g.QuantWeights == nil || g.QuantWeights.Status != verdict.Pass || g.QuantWeights.Judged != 14 || g.QuantWeights.Kept != 7 || g.QuantWeights.Layers != 2 {
			b, _ := inst.JSON()
			t.Fatalf("instruct: quantized gate 1 is not a PASS with 14 tensors judged and 7 kept:\n%s", b)
		}
		for _, row := range g.QuantWeights.Rows {
			if row.Status != verdict.Pass {
				t.Errorf("instruct: layer %d %s: %s", row.Layer, row.Tensor, row.Status)
			}
		}
		if g.QuantConfig == nil || g.QuantConfig.Status != verdict.Pass || g.Pairing == nil || g.Pairing.Status != verdict.Pass {
			t.Errorf("instruct: quantized gate 3 %+v, pairing %+v", g.QuantConfig, g.Pairing)
		}
		if c := g.QuantConfig; c != nil {
			called := 0
			for _, k := range c.Checked {
				if strings.HasPrefix(k.Name, "llama32_1b_q4nx_config().") {
					called++
				}
			}
			if called != 16 || c.Behaviour == nil || !slices.Contains(c.Behaviour.Checked, "behaviour.rope_table") {
				t.Errorf("instruct: gate 3 did not call the config function (%d values, reference and bundle config) or judge the RoPE table by behaviour: %+v", called, c.Behaviour)
			}
		}
		e := g.QuantE2E
		if e == nil || e.Status != verdict.Pass || e.Patched != 14 || e.HeadPatched || !e.Top1Agrees || e.Limits.MaxKL == 0 || e.KLPassageMean > e.Limits.MaxKL || e.PerplexityRatio <= 0 {
			t.Errorf("instruct: quantized gate 2 is not a PASS with 14 projections patched and the tied bf16 head left: %+v", e)
		}
		if !strings.Contains(inst.Text(), "weights (quantized Q4NX)") || !strings.Contains(inst.Text(), "quantized end to end") {
			t.Errorf("instruct: the report does not name the format:\n%s", inst.Text())
		}
		if text := r.Text(); !strings.Contains(text, `quantized: llama32_1b_q4nx key "base"`) && !strings.Contains(text, `quantized: llama32_1b_q4nx key "instruct"`) ||
			strings.Count(text, "pairing (bundle source vs reference)") != 2 || !strings.Contains(text, "── llama32_1b_q4nx key ") {
			t.Errorf("the text report does not show every key's table:\n%s", text)
		}
		p := base.Gates.Pairing
		if p == nil || p.Status != verdict.Fail || !strings.Contains(p.Summary, `key "base"`) || !strings.Contains(p.Summary, "declares base_model "+llamaInstr) ||
			!strings.Contains(p.Summary, `key "instruct"`) || p.RightKey != "instruct" {
			t.Errorf("base: pairing does not FAIL naming the Instruct source and the right key: %+v", p)
		}
		if c := p.Closeness; p == nil || len(c) != 2 || c[0].ID != llamaBase || c[1].ID != llamaInstr || c[1].Cosine < 0.99 || c[0].Cosine > 0.5 {
			t.Errorf("base: the numbers do not back the pairing: %+v", p)
		}
		if s := g.Pairing.Summary; !strings.Contains(s, "the numbers agree") {
			t.Errorf("instruct: the pairing's numbers are not shown: %s", s)
		}
		for _, k := range keys {
			if k.Workspace == nil || !strings.HasPrefix(k.Workspace.ReportJSON, filepath.Join(cache, "validated")) || !strings.HasPrefix(k.Workspace.ReportJSON, k.Workspace.RecordDir+string(filepath.Separator)) {
				t.Errorf("key %s: record not in phase0's cache: %+v", k.Quantized.Key, k.Workspace)
			}
		}
		if keys["base"].Workspace != nil && keys["instruct"].Workspace != nil && keys["base"].Workspace.ReportJSON == keys["instruct"].Workspace.ReportJSON {
			t.Errorf("both keys share one record: %s", keys["base"].Workspace.ReportJSON)
		}
	})

	for _, c := range []struct{ bundle, names string }{
		{"random", "layer 1 wv"},
		{"transposed", "layer 0 wq"},
		{"swapped", "layer 1 w_gate"},
		{"nibbles", "layer 0 wq"},
		{"doubled_scale", "layer 0 w_down"},
		{"missing_tensor", "model.layers.1.mlp.down_proj.weight: missing tensor — the bundle holds no such tensor"},
	} {
		t.Run("negative "+c.bundle, func(t *testing.T) {
			before := testenv.SnapshotTree(t, llms)
			r := Run(context.Background(), settings(t, hub(t, c.bundle), q4nxFolder), llamaInstr, "test")
			sameTree(t, before)
			w := r.Gates.QuantWeights
			if r.Quantized == nil || r.Quantized.Key != "instruct" || w == nil || w.Status != verdict.Fail {
				b, _ := r.JSON()
				t.Fatalf("not a quantized gate 1 FAIL of key instruct:\n%s", b)
			}
			if !strings.Contains(strings.Join(w.Findings, "\n"), c.names) {
				t.Errorf("no finding names %q:\n%s", c.names, strings.Join(w.Findings, "\n"))
			}
			// The bundle's fault is gate 1's: the bf16 baseline is the
			// reference's alone (the tiny untrained reference's own verdict,
			// its near-uniform entropy), and quantized gate 2 says why it
			// did not run.
			if b, e := r.Gates.HFBaseline, r.Gates.QuantE2E; b == nil || strings.Contains(b.Summary, "raised") || len(b.Tokens) == 0 || e == nil || e.Status != verdict.Skip || !strings.Contains(e.Summary, "not run: quantized gate 1 failed") {
				j, _ := r.JSON()
				t.Errorf("want the bf16 baseline of the reference and quantized gate 2 SKIPPED naming gate 1:\n%s", j)
			}
		})
	}

}

// A bundle whose model.q4nx does not fit its header (a truncated download,
// a dtype that lies about the bytes) FAILs quantized gate 1 naming the file
// and the tensor, before any loader reads it; the bf16 baseline runs on the
// reference alone (the bundle's fault never blames the reference),
// and quantized gate 2 says why it did not run; the tree is byte for byte
// as it was.
func TestQuantizedCorruptBundle(t *testing.T) {
	t.Parallel()
	fx := testenv.QuantFixtures(t)
	clean := mustReadString(t, filepath.Join(fx, "bundles", "clean", "model.q4nx"))
	n := binary.LittleEndian.Uint64([]byte(clean[:8]))
	header := clean[8 : 8+n]
	gate := `"model.layers.0.mlp.gate_proj.weight":{"dtype":"I8"`
	if !strings.Contains(header, gate) {
		t.Fatalf("the clean bundle's header has no %s: %s", gate, header)
	}
	down := regexp.MustCompile(`"model\.layers\.1\.mlp\.down_proj\.weight":\{[^}]*\},`).FindString(header)
	if down == "" {
		t.Fatalf("the clean bundle's header has no layer 1 down_proj entry: %s", header)
	}
	for _, tc := range []struct{ name, bundle, want string }{
		{"truncated", clean[:len(clean)/2], "runs past the end"},
		// The entry gone, its bytes in place: the bytes are named, and whose they likely are.
		{"unlisted bytes", relabel(header, down, "") + clean[8+n:], `unlisted bytes at data offsets [714240, 796160) between tensor "model.layers.1.input_layernorm.weight" and tensor "model.layers.1.mlp.gate_proj.weight": no tensor of the header covers them; likely the bytes of "model.layers.1.mlp.down_proj.weight"`},
		{"dtype lies", relabel(header, gate, strings.Replace(gate, "I8", "F64", 1)) + clean[8+n:], `tensor "model.layers.0.mlp.gate_proj.weight": shape [16 5120] of F64`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			llms := quantTree(t)
			repo := fastflowlmRepo(t, fx, "clean", llamaInstr)
			testenv.WriteFile(t, filepath.Join(repo, "model.q4nx"), tc.bundle)
			s := settingsFor(t, llms)
			s.CacheDir = t.TempDir()
			s.Env = testenv.OfflineHub(t, map[string]string{llamaInstr: filepath.Join(fx, "ref"), llamaBase: filepath.Join(fx, "other"), bundleID: repo})
			before := testenv.SnapshotTree(t, llms)
			r := Run(context.Background(), s, bundleID, "test")
			testenv.UnchangedExcept(t, before, testenv.SnapshotTree(t, llms))
			for _, k := range append([]*report.Report{r}, r.Keys...) {
				w := k.Gates.QuantWeights
				b, e := k.Gates.HFBaseline, k.Gates.QuantE2E
				if k.Status != verdict.Fail || w == nil || w.Status != verdict.Fail || !strings.Contains(w.Summary, tc.want) || !strings.Contains(w.Summary, "model.q4nx: ") || !strings.Contains(w.Summary, `tensor "model.`) ||
					b == nil || strings.Contains(b.Summary, "raised") || len(b.Tokens) == 0 || e == nil || e.Status != verdict.Skip || !strings.Contains(e.Summary, "not run: the bundle's files are unreadable") {
					j, _ := k.JSON()
					t.Errorf("want FAIL, quantized gate 1 naming %q, the bf16 baseline of the reference, quantized gate 2 SKIPPED saying why:\n%s", tc.want, j)
				}
			}
		})
	}
}

// TestQuantizedHeaderDTypeWarns: a bundle whose final norm's header says
// F16 over its BF16 bytes is read by the folder's loader as bf16, bit for
// bit the reference's: quantized gate 1 WARNs naming the tensor and both
// dtypes and fails nothing, so quantized gate 2 runs.
func TestQuantizedHeaderDTypeWarns(t *testing.T) {
	t.Parallel()
	fx := testenv.QuantFixtures(t)
	clean := mustReadString(t, filepath.Join(fx, "bundles", "clean", "model.q4nx"))
	n := binary.LittleEndian.Uint64([]byte(clean[:8]))
	norm := `"model.norm.weight":{"dtype":"BF16"`
	llms := quantTree(t)
	repo := fastflowlmRepo(t, fx, "clean", llamaInstr)
	testenv.WriteFile(t, filepath.Join(repo, "model.q4nx"), relabel(clean[8:8+n], norm, strings.Replace(norm, "BF16", "F16", 1))+clean[8+n:])
	s := settingsFor(t, llms)
	s.CacheDir = t.TempDir()
	s.Env = testenv.OfflineHub(t, map[string]string{llamaInstr: filepath.Join(fx, "ref"), llamaBase: filepath.Join(fx, "other"), bundleID: repo})
	r := Run(context.Background(), s, bundleID, "test")
	instruct := 0
	for _, k := range append([]*report.Report{r}, r.Keys...) {
		if k.Quantized == nil || k.Quantized.Key != "instruct" {
			continue // the base key's reference is another model's (the pairing's FAIL)
		}
		instruct++
		w, e := k.Gates.QuantWeights, k.Gates.QuantE2E
		want := "final_norm (model.norm.weight): the bundle's header says F16, but its bytes are BF16"
		if w == nil || w.Status != verdict.Warn || len(w.Findings) != 1 || !strings.Contains(w.Findings[0], want) || e == nil || e.Status == verdict.Skip {
			j, _ := k.JSON()
			t.Errorf("want quantized gate 1 WARN %q alone and quantized gate 2 run:\n%s", want, j)
		}
	}
	if instruct == 0 {
		j, _ := r.JSON()
		t.Errorf("no report of key instruct:\n%s", j)
	}
}

// relabel is a safetensors header with old replaced by new, its length
// prefix and padding redone.
func relabel(header, old, new string) string {
	h := strings.Replace(header, old, new, 1)
	h += strings.Repeat(" ", (8-len(h)%8)%8)
	var length [8]byte
	binary.LittleEndian.PutUint64(length[:], uint64(len(h)))
	return string(length[:]) + h
}

// TestQuantizedRopeAndBundleConfig: the RoPE table the folder's prefill
// builds with generate_rope_lut imported inside a method from llama32_1b
// (as upstream's llama32_1b_q4nx does) is the one quantized gate 3 judges
// by behaviour; an edited θ default of the decode's own RoPE function is
// named in its file; a bundle whose own config.json says rope_theta 10000
// FAILs gate 3 naming the bundle's value.
func TestQuantizedRopeAndBundleConfig(t *testing.T) {
	t.Parallel()
	fx := testenv.QuantFixtures(t)
	llms := quantTree(t)
	folder := filepath.Join(llms, "llama32_1b_q4nx")
	testenv.WriteFile(t, filepath.Join(folder, "llama32_1b_q4nx_prefill.py"),
		"class LlamaQ4nxPrefill:\n    def __init__(self, seq_len=2048):\n        from llama32_1b_weights import LlamaConfig, generate_rope_lut\n\n        self._rope_lut = generate_rope_lut(LlamaConfig(), seq_len)\n")
	testenv.WriteFile(t, filepath.Join(folder, "llama32_1b_q4nx_inference.py"),
		"def _llama3_rope(\n    n_pos,\n    dim,\n    theta=10000.0,\n):\n    pass\n")
	repo := fastflowlmRepo(t, fx, "clean", llamaInstr)
	cfg := mustReadString(t, filepath.Join(repo, "config.json"))
	if !strings.Contains(cfg, `"rope_theta": 500000.0`) {
		t.Fatalf("the reference's config.json has no rope_theta 500000.0:\n%s", cfg)
	}
	testenv.WriteFile(t, filepath.Join(repo, "config.json"), strings.Replace(cfg, `"rope_theta": 500000.0`, `"rope_theta": 10000.0`, 1))
	s := settingsFor(t, llms)
	s.CacheDir, s.Name = t.TempDir(), q4nxFolder
	s.Env = testenv.OfflineHub(t, map[string]string{llamaInstr: filepath.Join(fx, "ref"), llamaBase: filepath.Join(fx, "other"), bundleID: repo})
	r := Run(context.Background(), s, llamaInstr, "test")
	c := r.Gates.QuantConfig
	if c == nil {
		b, _ := r.JSON()
		t.Fatalf("no quantized gate 3:\n%s", b)
	}
	f := strings.Join(c.Findings, "\n")
	if c.Status != verdict.Fail || c.Behaviour == nil || c.RopeFrom != filepath.Join(llms, "llama32_1b", "llama32_1b_weights.py") ||
		!strings.Contains(f, "llama32_1b_q4nx_inference.py: _llama3_rope(theta) = 10000, but the reference's config.json gives rope_base = 500000") ||
		!strings.Contains(f, "the bundle's config.json gives rope_base = 10000, the reference's 500000") {
		t.Errorf("gate 3 %s, RoPE table of %q judged (behaviour %v), findings:\n%s", c.Status, c.RopeFrom, c.Behaviour != nil, f)
	}
}
