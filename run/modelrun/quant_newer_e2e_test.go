package modelrun

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/output/report"
)

// TestQuantizedQwen3_4B: the qwen3_4b_q4nx folder upstream added after
// our snapshot (the 8B reader subclassed at Qwen3-4B's dimensions: the q
// dim decoupled from the hidden size, so o_proj maps DQ → D; a tied head,
// no lm_head in the bundle), written by our code at tiny shapes with the
// same DQ ≠ D property (512 ≠ 256), is judged like qwen3_8b_q4nx with
// Qwen/Qwen3-4B as its reference: the clean bundle PASSes quantized gates
// 1 and 3 and the pairing with every projection judged and the tied head
// kept as the embedding; the same bundle with layer 1's o_proj scale
// doubled FAILs quantized gate 1 naming layer 1 and its o_proj (wo). The tree
// is byte for byte as it was.
func TestQuantizedQwen3_4B(t *testing.T) {
	t.Parallel()
	const (
		ref    = "Qwen/Qwen3-4B"
		bundle = "FastFlowLM/Qwen3-4B-NPU2"
	)
	fx := testenv.QuantFixtures(t)
	llms := quantTree(t)
	testenv.CopyTestData(t, llms, "quant_newer/llms")
	before := testenv.SnapshotTree(t, llms)
	var runIn func(t *testing.T, llms, bundleCase string) []*report.Report
	run := func(t *testing.T, bundleCase string) []*report.Report { return runIn(t, llms, bundleCase) }
	runIn = func(t *testing.T, llms, bundleCase string) []*report.Report {
		dir := t.TempDir()
		testenv.WriteFile(t, filepath.Join(dir, "model.q4nx"), mustReadString(t, filepath.Join(fx, "bundles", bundleCase, "model.q4nx")))
		testenv.WriteFile(t, filepath.Join(dir, "config.json"), mustReadString(t, filepath.Join(fx, "qwen3_4b", "config.json")))
		testenv.WriteFile(t, filepath.Join(dir, "README.md"), "---\nlicense: apache-2.0\nbase_model: "+ref+"\ntags:\n- q4nx\n---\n\n# Qwen3-4B-NPU2\n")
		s := settingsFor(t, llms)
		s.Env = testenv.OfflineHub(t, map[string]string{ref: filepath.Join(fx, "qwen3_4b"), bundle: dir})
		s.Name, s.CacheDir = "qwen3_4b_q4nx", t.TempDir()
		r := Run(context.Background(), s, ref, "test")
		return append([]*report.Report{r}, r.Keys...)
	}

	t.Run("clean", func(t *testing.T) {
		keys := run(t, "qwen3_4b")
		if len(keys) != 2 {
			t.Fatalf("%d keys, want base and instruct", len(keys))
		}
		r := keys[0]
		// 7 projections × 2 layers quantized (no lm_head: the head is
		// tied); the embedding, the final norm, the head (the embedding
		// itself) and per layer 2 norms and 2 QK-norms kept.
		cleanKey(t, r, "Q4NX", 14, 11)
		o := false
		for _, row := range r.Gates.QuantWeights.Rows {
			if row.Tensor == "lm_head" && row.Metrics != nil {
				t.Errorf("the tied head is judged as a quantized tensor: %+v", row)
			}
			o = o || row.Tensor == "wo" && row.Metrics != nil
		}
		if !o {
			t.Errorf("no o_proj (wo, DQ → D) judged as a quantized tensor")
		}
		if p := r.Gates.Pairing; p == nil || p.Status != verdict.Pass {
			t.Errorf("pairing is not a PASS: %+v", p)
		}
		// Quantized gate 2 against the twin (the bf16 baseline of random
		// weights is near-uniform: its own gate, not the bundle's).
		if e := r.Gates.QuantE2E; e == nil || e.Status != verdict.Pass || e.HeadPatched {
			b, _ := json.MarshalIndent(e, "", " ")
			t.Errorf("quantized gate 2 is not a PASS with the tied head left as the embedding:\n%s", b)
		}
	})

	t.Run("layer 1 o_proj doubled", func(t *testing.T) {
		r := run(t, "qwen3_4b_o_doubled")[0]
		w := r.Gates.QuantWeights
		if w == nil || w.Status != verdict.Fail {
			t.Fatalf("quantized gate 1 is not a FAIL: %+v", w)
		}
		for _, row := range w.Rows {
			bad := row.Status == verdict.Fail
			if bad != (row.Layer == 1 && row.Tensor == "wo") {
				t.Errorf("layer %d %s: %s", row.Layer, row.Tensor, row.Status)
			}
		}
		if !strings.Contains(r.Text(), "layer 1 wo") {
			t.Errorf("the report does not name layer 1's o_proj (wo):\n%s", r.Text())
		}
		t.Logf("%s", w.Summary)
	})
	// As upstream's newer module: load_q4nx_weights imports its containers
	// from a sibling folder (qwen3_4b_weights) that nothing has put on
	// sys.path, so the function cannot run on its own; the folder's drivers
	// read through Q4nxModel. Gate 1 judges every tensor through the class
	// and WARNs naming the function and the module it could not import.
	t.Run("load function cannot import its containers", func(t *testing.T) {
		other := quantTree(t)
		testenv.CopyTestData(t, other, "quant_newer/llms")
		module := filepath.Join(other, "qwen3_4b_q4nx", "qwen3_4b_q4nx_weights.py")
		text := mustReadString(t, module)
		const body = "    mod = _qwen3_containers()\n    config = config or qwen3_4b_q4nx_config()\n"
		if !strings.Contains(text, body) {
			t.Fatalf("%s has no %q", module, body)
		}
		testenv.WriteFile(t, module, strings.Replace(text, body, "    from qwen3_4b_weights import LayerWeights, LlamaWeights  # noqa: F401\n"+body, 1))
		r := runIn(t, other, "qwen3_4b")[0]
		w := r.Gates.QuantWeights
		if w == nil || w.Status != verdict.Warn || w.Judged != 14 || w.Loader != "class Q4nxModel" {
			b, _ := json.MarshalIndent(w, "", " ")
			t.Fatalf("quantized gate 1 is not a WARN with 14 tensors judged through class Q4nxModel:\n%s", b)
		}
		if f := strings.Join(w.Findings, "\n"); !strings.Contains(f, "load_q4nx_weights() raised ModuleNotFoundError") || !strings.Contains(f, "qwen3_4b_weights") {
			t.Errorf("the WARN does not name the function and the module it could not import: %s", f)
		}
		t.Logf("%s", w.Findings)
	})
	testenv.SameTreeAs(t, llms, before)
}
