package quant_test

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/gate/quant"
	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/python/ops/opstest"
	"phase0/read/safetensors"
	"phase0/wire"
)

func TestMain(m *testing.M) { os.Exit(opstest.Main(m)) }

// fixtures returns the quantized gate's fixtures, cached across runs by
// testenv.QuantFixtures: two real transformers-written tiny Llama
// checkpoints, the clean Q4NX bundle of the first and one negative bundle
// per failure class, packed by our own packer
// (pyshim/tests/quant_gate_fixtures.py).
func fixtures(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Python")
	}
	return testenv.QuantFixtures(t)
}

// q4nxModule is llama32_1b_q4nx's module in a fresh upstream-style tree
// (pyshim/tests/data/quant, copied per test: the cached fixtures' tree
// would not follow an edit of it).
func q4nxModule(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	testenv.CopyTestData(t, root, "quant")
	llms := filepath.Join(root, "llms")
	for _, name := range []string{"llama32_1b", "qwen3_0_6b", "qwen25_0_5b"} {
		testenv.CopyTestData(t, filepath.Join(llms, name), "upstream/"+name)
	}
	return filepath.Join(llms, "llama32_1b_q4nx", "llama32_1b_q4nx_weights.py")
}

func judge(t *testing.T, dir, bundle string) *quant.Weights {
	t.Helper()
	f := quant.Q4NX()
	module := q4nxModule(t)
	facts, err := opstest.Client(t).QuantFacts(context.Background(), wire.QuantArgs{WeightsModule: module, Source: filepath.Join(dir, "bundles", bundle),
		ReferenceDir: filepath.Join(dir, "ref"), NLayers: 2, Bound: f.Bound()})
	if err != nil {
		t.Fatal(err)
	}
	if facts.ImportFailure != nil {
		t.Fatalf("import failure: %+v", facts.ImportFailure)
	}
	return quant.Judge(f, &facts, quant.Expect{NLayers: 2})
}

func TestQuantGate1Clean(t *testing.T) {
	dir := fixtures(t)
	for _, b := range []string{"clean", "clean_q4nx"} {
		w := judge(t, dir, b)
		if w.Status != verdict.Pass || w.Judged != 14 || w.Kept != 7 || w.Layers != 2 {
			t.Errorf("%s: %s judged %d kept %d layers %d: %s %q", b, w.Status, w.Judged, w.Kept, w.Layers, w.Summary, w.Findings)
		}
		for _, r := range w.Rows {
			if m := r.Metrics; m != nil && (m.Cosine < 0.995 || m.RelL2 > 0.09 || m.BeyondBound != 0) {
				t.Errorf("%s: layer %d %s: %+v, want a clean pack's cosine ≥ 0.995, rel L2 ≤ 0.09, none beyond the bound", b, r.Layer, r.Tensor, *m)
			}
		}
	}
}

// TestQuantGate1Negatives: each failure class FAILs naming the layer, the
// tensor, the metric and, where the numbers say it, the likely cause.
func TestQuantGate1Negatives(t *testing.T) {
	dir := fixtures(t)
	for _, c := range []struct {
		bundle string
		want   []string // substrings of one finding
	}{
		{"random", []string{"layer 1 wv", "cosine", "random-init tensor or another model's"}},
		{"transposed", []string{"layer 0 wq", "cosine", "likely cause: transposed"}},
		{"swapped", []string{"layer 1 w_gate", "likely cause: swapped with w_up"}},
		{"nibbles", []string{"layer 0 wq", "nibble order"}},
		{"doubled_scale", []string{"layer 0 w_down", "std ratio", "doubled scale"}},
		{"other_model", []string{"layer 0 wq", "cosine", "another model's"}},
		// The causes the statistics show where the numbers alone said
		// nothing or "a wrong codec": the spread, the zeros, the offset.
		{"scale_1_1", []string{"layer 1 wo", "cosine 0.97", "likely cause: a scale error — the values spread 1.10", "std ratio 1.10", "a scale stored ≈ 1.10× what it should be"}},
		{"zeroed_rows", []string{"layer 0 w_up", "likely cause: zeroed rows — 32 of the 512 output rows (rows 32–63) are all zero where the reference's are not"}},
		{"shifted_mins", []string{"layer 1 w_down", "fraction beyond the Q4NX error bound", "likely cause: a constant offset — the errors share one mean, +0.000", "≈ +0.10 of a quantization step", "the mins (zero points) shifted"}},
		{"missing_tensor", []string{"model.layers.1.mlp.down_proj.weight: missing tensor — the bundle holds no such tensor: class Q4nxModel raised KeyError asking for it"}},
	} {
		w := judge(t, dir, c.bundle)
		if w.Status != verdict.Fail {
			t.Errorf("%s: %s, want FAIL: %s", c.bundle, w.Status, w.Summary)
			continue
		}
		found := false
		for _, f := range w.Findings {
			ok := true
			for _, s := range c.want {
				ok = ok && strings.Contains(f, s)
			}
			found = found || ok
		}
		if !found {
			t.Errorf("%s: no finding names %q; findings:\n%s", c.bundle, c.want, strings.Join(w.Findings, "\n"))
		}
	}
	// A constant offset in every projection is named in every one, never as
	// a wrong codec; a missing tensor is that one finding, not a finding
	// for each tensor the stopped loader did not return.
	if w := judge(t, dir, "shifted_mins"); len(w.Findings) != 14 || strings.Contains(strings.Join(w.Findings, "\n"), "wrong codec") {
		t.Errorf("shifted_mins: %d findings, want one per projection (14), none a wrong codec:\n%s", len(w.Findings), strings.Join(w.Findings, "\n"))
	}
	if w := judge(t, dir, "missing_tensor"); len(w.Findings) != 1 {
		t.Errorf("missing_tensor: want the one missing-tensor finding:\n%s", strings.Join(w.Findings, "\n"))
	}
	// Another model's bundle also fails the bf16-kept tensors' byte identity.
	w := judge(t, dir, "other_model")
	if !strings.Contains(strings.Join(w.Findings, "\n"), "attn_norm (model.layers.0.input_layernorm.weight): kept in bf16 but") {
		t.Errorf("other_model: the norms' byte identity is not judged:\n%s", strings.Join(w.Findings, "\n"))
	}
}

// TestQuantE2EOp: quantized gate 2 alone (the path taken when the bf16
// gate 2 is reused from its record) through the real worker: every
// projection patched into the reference model after its 4-bit twin, both
// sides' facts; the clean bundle PASSes against the twin, the one with
// mis-ordered nibbles FAILs naming layer 0 as where the hidden states part.
func TestQuantE2EOp(t *testing.T) {
	dir := fixtures(t)
	module := q4nxModule(t)
	for _, c := range []struct {
		bundle string
		want   verdict.Status
		names  string
	}{{"clean", verdict.Pass, "judged against its affine 4-bit g32 (16 levels), bf16 scale and min twin"}, {"nibbles", verdict.Fail, "hidden states first part from the reference at layer 0"}} {
		facts, err := opstest.Client(t).QuantE2E(context.Background(), wire.QuantE2EOnlyArgs{
			QuantE2EArgs: wire.QuantE2EArgs{WeightsModule: module, Source: filepath.Join(dir, "bundles", c.bundle), ReferenceDir: filepath.Join(dir, "ref"), NLayers: 2, Rule: quant.Q4NX().Bound()},
			ModelDir:     filepath.Join(dir, "ref"), PromptTokens: []int{1, 20, 30, 40, 50}})
		if err != nil {
			t.Fatal(err)
		}
		e := quant.JudgeE2E(quant.Q4NX(), &facts, 2)
		if e.Patched != 14 || facts.TwinQuantized != 14 || len(facts.KLPassageTwin) == 0 || e.Status != c.want || !strings.Contains(e.Summary, c.names) {
			t.Errorf("%s: %s %q (patched %d, twin %d, %d passage positions)", c.bundle, e.Status, e.Summary, e.Patched, facts.TwinQuantized, len(facts.KLPassage))
		}
	}
}

// TestQuantGate1HeaderDType: a norm whose header says F16 over its BF16
// bytes (a real packed bundle, relabelled) reads back bit for bit, since
// the folder's loader reads it as bf16 whatever the header says: gate 1
// WARNs naming the tensor and both dtypes, and FAILs nothing.
func TestQuantGate1HeaderDType(t *testing.T) {
	dir := fixtures(t)
	clean, err := os.ReadFile(filepath.Join(dir, "bundles", "clean", "model.q4nx"))
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(clean[:8])
	norm := `"model.norm.weight":{"dtype":"BF16"`
	header := string(clean[8 : 8+n])
	if !strings.Contains(header, norm) {
		t.Fatalf("the clean bundle's header has no %s", norm)
	}
	bundles := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bundles, "bundles", "f16_norm"), 0o755); err != nil {
		t.Fatal(err)
	}
	header = strings.Replace(header, norm, strings.Replace(norm, "BF16", "F16", 1), 1)
	header += strings.Repeat(" ", (8-len(header)%8)%8)
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	file = append(append(file, header...), clean[8+n:]...)
	path := filepath.Join(bundles, "bundles", "f16_norm", "model.q4nx")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "ref"), filepath.Join(bundles, "ref")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := safetensors.ReadHeaderWith(f, int64(len(file)), "model.q4nx", safetensors.ExtraDTypes{"Q4NX": quant.Q4NXBytes})
	if err != nil {
		t.Fatal(err)
	}
	dtypes := map[string]string{}
	for _, t := range h.Tensors {
		dtypes[t.Name] = t.DType
	}
	w := judge(t, bundles, "f16_norm")
	w.CheckHeaderDTypes(dtypes)
	want := "final_norm (model.norm.weight): the bundle's header says F16, but its bytes are BF16 (read as bf16 they equal the reference's bit for bit)"
	if w.Status != verdict.Warn || len(w.Findings) != 1 || !strings.Contains(w.Findings[0], want) {
		t.Errorf("%s %q, want WARN: %s", w.Status, w.Findings, want)
	}
	w = judge(t, dir, "clean")
	w.CheckHeaderDTypes(map[string]string{"model.norm.weight": "BF16"})
	if w.Status != verdict.Pass {
		t.Errorf("clean: %s %q", w.Status, w.Findings)
	}
}
