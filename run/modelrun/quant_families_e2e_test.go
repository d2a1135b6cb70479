package modelrun

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/output/report"
)

// familyRepo is a FastFlowLM-style repo folder for a deployed family's
// bundle: the model.q4nx and a card declaring base.
func familyRepo(t *testing.T, fx, family, bundle, base string) string {
	t.Helper()
	dir := t.TempDir()
	testenv.WriteFile(t, filepath.Join(dir, "model.q4nx"), mustReadString(t, filepath.Join(fx, "bundles", family, bundle, "model.q4nx")))
	testenv.WriteFile(t, filepath.Join(dir, "README.md"), "---\nbase_model: "+base+"\ntags:\n- q4nx\n---\n\n# NPU2 bundle\n")
	return dir
}

// TestQuantizedFamiliesTree: the tree's Gemma 3 and Phi-4-mini folders,
// their bundles and references read offline from an HF cache. Each clean
// bundle's id validates its folder's keys: quantized gate 1 PASSes with
// every tensor judged under the family's conventions, gate 3 is judged
// (constants, global layers, RoPE tables), the pairing PASSes (Gemma's
// card names google's repo, the key unsloth's mirror). A doubled scale in
// one Gemma layer and gate/up swapped in one Phi layer FAIL naming the
// layer. The tree is byte for byte as it was.
func TestQuantizedFamiliesTree(t *testing.T) {
	t.Parallel()
	fx := testenv.QuantFamilyFixtures(t)
	llms := quantTree(t)
	// The folders as upstream has them: ours, not quantTree's adapters alone.
	data := filepath.Join(testenv.PyShim(), "tests", "data", "quant", "llms")
	for _, f := range []string{"gemma3_4b_q4nx/verify_adapter.py", "phi4_mini_q4nx/verify_adapter.py"} {
		testenv.WriteFile(t, filepath.Join(llms, f), mustReadString(t, filepath.Join(data, f)))
	}
	const (
		gemmaBundle, gemmaRef = "FastFlowLM/Gemma3-4B-NPU2", "unsloth/gemma-3-4b-it"
		phiBundle, phiRef     = "FastFlowLM/Phi4-mini-Instruct-NPU2", "microsoft/Phi-4-mini-instruct"
	)
	cache := t.TempDir()
	run := func(t *testing.T, id, gemma, phi string) *report.Report {
		env := testenv.OfflineHub(t, map[string]string{
			gemmaRef: filepath.Join(fx, "gemma3"), phiRef: filepath.Join(fx, "phi3"),
			gemmaBundle: familyRepo(t, fx, "gemma3", gemma, "google/gemma-3-4b-it"),
			phiBundle:   familyRepo(t, fx, "phi3", phi, phiRef),
		})
		s := settingsFor(t, llms)
		s.Env, s.CacheDir = env, cache
		before := testenv.SnapshotTree(t, llms)
		r := Run(context.Background(), s, id, "test")
		testenv.SameTreeAs(t, llms, before)
		return r
	}
	weights := func(r *report.Report) string {
		var b strings.Builder
		for _, k := range append([]*report.Report{r}, r.Keys...) {
			if w := k.Gates.QuantWeights; w != nil {
				b.WriteString(strings.Join(w.Findings, "\n") + "\n")
			}
		}
		return b.String()
	}

	t.Run("gemma3 clean", func(t *testing.T) {
		r := run(t, gemmaBundle, "clean", "clean")
		g := r.Gates
		if g.QuantWeights == nil || g.QuantWeights.Status != verdict.Pass || g.QuantWeights.Judged != 43 || g.QuantWeights.Kept != 38 {
			b, _ := r.JSON()
			t.Fatalf("quantized gate 1 is not a PASS with 43 judged and 38 kept:\n%s", b)
		}
		if g.QuantConfig == nil || g.QuantConfig.Status != verdict.Pass || g.Pairing == nil || g.Pairing.Status != verdict.Pass {
			t.Errorf("gate 3 %+v\npairing %+v", g.QuantConfig, g.Pairing)
		}
		// The multimodal checkpoint's tensor set is not the pipeline's: the
		// native gate says it did not judge it, and why.
		if w := g.Weights; w == nil || w.Status != verdict.Skip || !strings.Contains(w.Summary, "judged by quantized gate 1") {
			t.Errorf("native weights gate: %+v", w)
		}
		// Quantized gate 2 in the multimodal class's text model: every
		// projection and the bundle's Q4NX head patched in, the
		// distributions barely moved (the random-weight baseline itself
		// FAILs as a near-uniform model, as for every format).
		if e := g.QuantE2E; e == nil || e.Patched != 42 || !e.HeadPatched || e.KLPassageMean > 0.1 {
			t.Errorf("quantized gate 2: %+v", e)
		}
		t.Logf("%s", r.Text())
	})
	t.Run("phi3 clean", func(t *testing.T) {
		r := run(t, phiBundle, "clean", "clean")
		for _, k := range append([]*report.Report{r}, r.Keys...) {
			g := k.Gates
			// q/k/v and gate/up re-fused into the model's fused rows.
			if e := g.QuantE2E; e == nil || e.Patched != 14 || e.HeadPatched || e.KLPassageMean > 0.1 {
				t.Errorf("quantized gate 2: %+v", e)
			}
			if g.QuantWeights == nil || g.QuantWeights.Status != verdict.Pass || g.QuantWeights.Judged != 14 || g.Pairing == nil || g.Pairing.Status != verdict.Pass || g.QuantConfig == nil || g.QuantConfig.Status == verdict.Fail {
				b, _ := k.JSON()
				t.Fatalf("a Phi key is not judged clean:\n%s", b)
			}
		}
		t.Logf("%s", r.Text())
	})
	t.Run("broken bundles name the layer", func(t *testing.T) {
		if r := run(t, gemmaBundle, "doubled_scale", "clean"); r.Status != verdict.Fail || !strings.Contains(weights(r), "layer 4 w_down") {
			t.Errorf("gemma doubled scale: %s\n%s", r.Status, weights(r))
		}
		if r := run(t, phiBundle, "clean", "gate_up_swapped"); r.Status != verdict.Fail || !strings.Contains(weights(r), "layer 1 w_gate") || !strings.Contains(weights(r), "[up, gate] order") {
			t.Errorf("phi gate/up swapped: %s\n%s", r.Status, weights(r))
		}
	})
}
