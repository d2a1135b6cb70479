package modelrun

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/output/report"
)

const (
	qwen3ID       = "Qwen/Qwen3-8B"
	qwen3BundleID = "FastFlowLM/Qwen3-8B-NPU2"
	qwen25Instr   = "Qwen/Qwen2.5-3B-Instruct"
	awqRef        = "amd/Llama-3.2-1B-Instruct-awq-uint4-asym-g128-bf16-lmhead"
)

// cleanKey checks a clean folder's key: quantized gates 1 and 3 PASS with
// every tensor judged (judged quantized, kept bf16 byte-identical) in the
// named format, and the key's record is outside the tree.
func cleanKey(t *testing.T, r *report.Report, format string, judged, kept int) {
	t.Helper()
	b, _ := json.MarshalIndent(r.Gates, "", " ")
	w := r.Gates.QuantWeights
	if r.Quantized == nil || w == nil || w.Status != verdict.Pass || w.Format != format || w.Judged != judged || w.Kept != kept || w.Layers != 2 {
		t.Fatalf("quantized gate 1 is not a %s PASS with %d tensors judged and %d kept over 2 layers:\n%s", format, judged, kept, b)
	}
	for _, row := range w.Rows {
		if row.Status != verdict.Pass {
			t.Errorf("layer %d %s: %s", row.Layer, row.Tensor, row.Status)
		}
	}
	if c := r.Gates.QuantConfig; c == nil || c.Status != verdict.Pass || len(c.Checked) == 0 {
		t.Errorf("quantized gate 3 is not a PASS with constants checked:\n%s", b)
	}
	if !strings.Contains(r.Text(), "weights (quantized "+format+")") {
		t.Errorf("the report does not name the format %s:\n%s", format, r.Text())
	}
}

// TestQuantizedFormats: the tree's other clean folders, each on tiny
// checkpoints of its own family: qwen3_8b_q4nx (Q4NX with QK-norms kept
// bf16 and an untied lm_head quantized as its own Q4NX tensor) and
// qwen25_3b_q4 (no bundle: the bf16 checkpoint quantized to Q4_0 on load,
// q/k/v biases kept bf16). Each PASSes quantized gates 1 and 3 with every
// tensor judged, and the tree stays byte for byte as it was.
// llama32_1b_int4 (AWQ), whose only key names the AWQ checkpoint itself as
// its reference, is REJECTED: there are no bf16 weights to judge against.
func TestQuantizedFormats(t *testing.T) {
	t.Parallel()
	fx := testenv.QuantFixtures(t)
	llms := quantTree(t)
	bundle := t.TempDir()
	testenv.WriteFile(t, filepath.Join(bundle, "model.q4nx"), mustReadString(t, filepath.Join(fx, "bundles", "qwen3", "model.q4nx")))
	testenv.WriteFile(t, filepath.Join(bundle, "config.json"), mustReadString(t, filepath.Join(fx, "qwen3", "config.json")))
	testenv.WriteFile(t, filepath.Join(bundle, "README.md"), "---\nlicense: apache-2.0\nbase_model: "+qwen3ID+"\ntags:\n- q4nx\n---\n\n# Qwen3-8B-NPU2\n")
	env := testenv.OfflineHub(t, map[string]string{
		qwen3ID:       filepath.Join(fx, "qwen3"),
		qwen3BundleID: bundle,
		qwen25Instr:   filepath.Join(fx, "qwen2"),
		awqRef:        filepath.Join(fx, "awq"),
	})
	cache := t.TempDir()
	before := testenv.SnapshotTree(t, llms)
	run := func(t *testing.T, id, folder string) []*report.Report {
		s := settingsFor(t, llms)
		s.Env, s.Name, s.CacheDir = env, folder, cache
		r := Run(context.Background(), s, id, "test")
		return append([]*report.Report{r}, r.Keys...)
	}

	t.Run("qwen3_8b_q4nx", func(t *testing.T) {
		// Both keys pair Qwen/Qwen3-8B; the first one's run is the same as
		// the second's, so one is enough.
		keys := run(t, qwen3ID, "qwen3_8b_q4nx")
		if len(keys) != 2 {
			t.Fatalf("%d keys, want base and instruct", len(keys))
		}
		r := keys[0]
		// 7 projections × 2 layers and the untied lm_head quantized; the
		// embedding, the final norm, and per layer 2 norms and 2 QK-norms kept.
		cleanKey(t, r, "Q4NX", 15, 10)
		for _, row := range r.Gates.QuantWeights.Rows {
			if row.Tensor == "lm_head" && row.Metrics == nil {
				t.Errorf("the untied lm_head is not judged as a quantized tensor: %+v", row)
			}
		}
		if p := r.Gates.Pairing; p == nil || p.Status != verdict.Pass {
			t.Errorf("pairing is not a PASS: %+v", p)
		}
		// The NPU reads the quantized head: quantized gate 2 must too.
		if e := r.Gates.QuantE2E; e == nil || !e.HeadPatched {
			t.Errorf("the quantized lm_head is not patched into quantized gate 2: %+v", e)
		}
	})

	t.Run("qwen25_3b_q4", func(t *testing.T) {
		keys := run(t, qwen25Instr, "qwen25_3b_q4")
		if len(keys) != 1 || keys[0].Quantized == nil || keys[0].Quantized.Key != "instruct" {
			t.Fatalf("%d keys, want instruct alone", len(keys))
		}
		// 7 projections × 2 layers; the embedding (tied head), the final
		// norm, the head (the embedding itself) and per layer 2 norms and 3
		// biases kept.
		cleanKey(t, keys[0], "Q4_0", 14, 13)
		// Q4_0 clips a group's positive peak from +8 to +7 (a whole step):
		// a clean tensor has a few per cent of its elements beyond half a
		// step, every one inside the format's allowance.
		w := keys[0].Gates.QuantWeights
		lo, hi := 1.0, 0.0
		for _, row := range w.Rows {
			if m := row.Metrics; m != nil {
				lo, hi = min(lo, m.BeyondBound), max(hi, m.BeyondBound)
			}
		}
		if lo <= 0.005 || hi > w.Limits.MaxBeyond {
			t.Errorf("clean Q4_0 tensors have %.4f–%.4f of their elements beyond half a step; want the clip's few per cent, under %.3f", lo, hi, w.Limits.MaxBeyond)
		}
		t.Logf("clean Q4_0: %.4f–%.4f beyond half a step", lo, hi)
	})

	// llama32_1b_int4's only key names the AWQ checkpoint itself as its
	// reference: packed integers, no bf16 weights to judge the dequant
	// against. The key is REJECTED as a quantized packaging, with nothing
	// judged (docs/quantized.md, "Limits of what is checked").
	t.Run("llama32_1b_int4", func(t *testing.T) {
		keys := run(t, awqRef, "llama32_1b_int4")
		r := keys[0]
		if len(keys) != 1 || r.Status != verdict.Rejected || len(r.Rejections) == 0 || r.Rejections[0].Code != "quantized" || r.Gates.QuantWeights != nil {
			b, _ := json.MarshalIndent(r, "", " ")
			t.Errorf("the AWQ key (its reference is the AWQ checkpoint) is not REJECTED [quantized] with nothing judged:\n%s", b)
		}
	})

	after := testenv.SnapshotTree(t, llms)
	testenv.UnchangedExcept(t, before, after)
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("new file in the tree: %s", p)
		}
	}
}

// TestQuantizedGate2Reuse: gate 2 of a quantized key is the reference's own
// recorded bf16 PASS when its inputs are unchanged. The tree's Q4_0 folder
// is paired with Qwen/Qwen2.5-0.5B (a trained tiny Qwen2 whose baseline
// PASSes, validated in the tree's qwen25_0_5b folder) and its constants set
// to that model's. (1) The reference's own run records its bf16 PASS; (2)
// the quantized key's run shows gate 2 "reused from" that record (the very
// section recorded: no baseline ran) and runs quantized gate 2 alone; (3)
// after the reference's files change, the key's run runs the baseline again.
func TestQuantizedGate2Reuse(t *testing.T) {
	t.Parallel()
	const ref = "Qwen/Qwen2.5-0.5B"
	llms := quantTree(t)
	folder := filepath.Join(llms, "qwen25_3b_q4")
	testenv.WriteFile(t, filepath.Join(folder, "verify_adapter.py"), "MODEL_CHOICES = {\"instruct\": \""+ref+"\"}\nDEFAULT_MODEL = \"instruct\"\n")
	module := filepath.Join(folder, "qwen25_3b_q4_weights.py")
	text := mustReadString(t, module)
	for _, c := range [][2]string{{"D = 256", "D = 64"}, {"DQ = 256", "DQ = 64"}, {"DK = 128", "DK = 32"}, {"DV = 128", "DV = 32"},
		{"DH = 64", "DH = 16"}, {"INTER = 512", "INTER = 128"}} {
		if !strings.Contains(text, c[0]) {
			t.Fatalf("%s has no %q", module, c[0])
		}
		text = strings.Replace(text, c[0], c[1], 1)
	}
	testenv.WriteFile(t, module, text)
	env := testenv.OfflineHub(t, map[string]string{ref: tiny(t, "qwen2")})
	cache := t.TempDir()
	run := func(name string) *report.Report {
		s := settingsFor(t, llms)
		s.Env, s.Name, s.CacheDir = env, name, cache
		return Run(context.Background(), s, ref, "test")
	}

	bf16 := run("")
	mustPass(t, bf16)
	recorded := bf16.Gates.HFBaseline

	r := run("qwen25_3b_q4")
	b, e := r.Gates.HFBaseline, r.Gates.QuantE2E
	if r.Quantized == nil || b == nil || !strings.HasPrefix(b.Summary, "reused from ") || b.Seconds != recorded.Seconds || b.Status != verdict.Pass {
		t.Fatalf("gate 2 is not the reference's recorded PASS, reused: %+v", b)
	}
	if e == nil || e.Patched != 14 || e.Status != verdict.Pass {
		t.Errorf("quantized gate 2 did not run alone on the reused baseline's prompt and PASS: %+v", e)
	}
	if w := r.Gates.QuantWeights; w == nil || w.Status != verdict.Pass || r.Gates.QuantConfig == nil || r.Gates.QuantConfig.Status != verdict.Pass {
		t.Errorf("quantized gates 1 and 3 do not PASS: %+v %+v", r.Gates.QuantWeights, r.Gates.QuantConfig)
	}
	t.Logf("reused: %s", stageDetail(r, "quant_baseline"))
	if !strings.Contains(stageDetail(r, "quant_baseline"), "reused from") {
		t.Errorf("the quant_baseline stage does not say gate 2 was reused: %s", stageDetail(r, "quant_baseline"))
	}

	// (4) An unchanged re-run of the key reuses its recorded PASS, as a
	// bf16 run does (issue 36 item 24); (5) once the reference's own record
	// changes (as a run of it rewrites it), the key's verdict is not reused.
	mustPass(t, r)
	again := run("qwen25_3b_q4")
	t.Logf("the key's full run %.2fs, its unchanged re-run %.3fs: %s", r.Seconds, again.Seconds, stageDetail(again, "quant_reuse"))
	if !strings.HasPrefix(stageDetail(again, "quant_reuse"), "PASS") || again.ReusedFrom == nil || again.Status != verdict.Pass || again.Quantized == nil {
		t.Fatalf("an unchanged re-run of the key was not reused: %s", stageDetail(again, "quant_reuse"))
	}
	bf16JSON := bf16.Workspace.ReportJSON
	testenv.WriteFile(t, bf16JSON, mustReadString(t, bf16JSON)+"\n")
	detail := stageDetail(run("qwen25_3b_q4"), "quant_reuse")
	if !strings.HasPrefix(detail, "SKIPPED") || !strings.Contains(detail, "reference record file report.json") {
		t.Errorf("after the reference's record changed: %s, want it not reused, naming report.json", detail)
	}

	// The reference's files change (its generation config, here): its
	// recorded baseline no longer stands for it.
	snap := filepath.Join(env("HF_HUB_CACHE"), "models--Qwen--Qwen2.5-0.5B", "snapshots", testenv.HubCommit(ref))
	gen := filepath.Join(snap, "generation_config.json")
	body := strings.Replace(mustReadString(t, gen), "{", "{\n  \"phase0_test_changed\": true,", 1)
	if err := os.Remove(gen); err != nil {
		t.Fatal(err)
	}
	testenv.WriteFile(t, gen, body)
	r = run("qwen25_3b_q4")
	b = r.Gates.HFBaseline
	if b == nil || strings.Contains(b.Summary, "reused") || b.Seconds == recorded.Seconds || r.Gates.QuantE2E == nil {
		t.Fatalf("after the reference changed, gate 2 was not run again: %+v", b)
	}
	t.Logf("after the change: %s", stageDetail(r, "quant_baseline"))
}
