package quant

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/wire"
)

// pinnedFacts reads worker facts pinned under testdata/DIR/NAME.json.
func pinnedFacts(t *testing.T, dir, name string) *wire.QuantE2EFacts {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f wire.QuantE2EFacts
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("testdata/%s/%s.json: %v", dir, name, err)
	}
	return &f
}

// TestTwinOnTheFixtures pins quantized gate 2 on the facts the worker gave
// for the quantized gate's fixtures (python -m phase0_benchmodels.quant_twin:
// the tiny 2-layer Llama `ref`, its clean Q4NX bundles and one negative per
// class, each against the twin, in one model). docs/quantized.md has the
// figures. Swapped gate/up and a transposed square projection are invisible
// end to end on random-init weights (gate and up, q and its transpose, are
// draws of one distribution): only gate 1 catches them, and this test says so.
func TestTwinOnTheFixtures(t *testing.T) {
	for _, c := range []struct {
		bundle string
		want   verdict.Status
		parts  int // -1: no layer parts
	}{
		{"clean", verdict.Pass, -1},
		{"clean_q4nx", verdict.Pass, -1},
		{"doubled_scale", verdict.Fail, 0}, // layer 0's down projection
		{"nibbles", verdict.Fail, 0},       // every layer
		{"random", verdict.Fail, 1},        // layer 1's v projection
		{"other_model", verdict.Fail, 0},
		{"swapped", verdict.Pass, -1},    // gate 1 only
		{"transposed", verdict.Pass, -1}, // gate 1 only
	} {
		e := JudgeE2E(Q4NX(), pinnedFacts(t, "twin", c.bundle), 2)
		if e.Status != c.want {
			t.Errorf("%s: %s, want %s: %s", c.bundle, e.Status, c.want, e.Summary)
			continue
		}
		switch p := e.Twin.PartsAt; {
		case c.parts < 0 && p != nil:
			t.Errorf("%s: parts at layer %d: %s", c.bundle, p.Layer, e.Summary)
		case c.parts >= 0 && (p == nil || p.Layer != c.parts || !strings.Contains(e.Summary, "first part from the reference at layer")):
			t.Errorf("%s: want the hidden states to part at layer %d: %+v %s", c.bundle, c.parts, p, e.Summary)
		}
		tw, b := e.Twin.Twin, e.Twin.Bundle
		t.Logf("%-13s %s  KL mean %.4f (twin %.4f) p99 %.4f (%.4f) max %.4f (%.4f); top-1 %.2f (%.2f); Δp rms %.4f (%.4f); ppl %.4f (%.4f); cos %.4v (%.4v)",
			c.bundle, e.Status, b.KL.Mean, tw.KL.Mean, b.KL.P99, tw.KL.P99, b.KL.Max, tw.KL.Max, b.Top1Agreement, tw.Top1Agreement, b.DeltaPRMS, tw.DeltaPRMS, b.PerplexityRatio, tw.PerplexityRatio, b.HiddenCosine, tw.HiddenCosine)
	}
}

// TestTwinOnATrainedModel pins quantized gate 2 on the tests' tiny trained
// Llama (64 wide, 2 layers, untied head; python -m
// phase0_benchmodels.quant_twin --trained): each format's clean pack and
// one-layer corruptions of layer 1's down projection (codes' rows swapped
// in pairs, a doubled scale) or of layer 1 (gate/up swapped, q_proj
// transposed), each judged against the format's own twin. A transposed q
// costs 2.4–3× the twin's KL, within the paired spread of the passage's 39
// tokens: gate 1 catches it, gate 2 does not (docs/quantized.md).
func TestTwinOnATrainedModel(t *testing.T) {
	for _, f := range []Format{q4nx{}, q40{}, awq{}} {
		prefix := map[string]string{"Q4NX": "Q4NX", "Q4_0": "Q4_0", "AWQ (int4 g128)": "AWQ"}[f.Name()]
		for _, c := range []struct {
			corruption string
			want       verdict.Status
		}{
			{"clean", verdict.Pass},
			{"nibbles", verdict.Fail},
			{"doubled_scale", verdict.Fail},
			{"swapped", verdict.Fail},
			{"transposed", verdict.Pass}, // gate 1 only
		} {
			e := JudgeE2E(f, pinnedFacts(t, "twin-trained", prefix+"-"+c.corruption), 2)
			if e.Status != c.want {
				t.Errorf("%s %s: %s, want %s: %s", prefix, c.corruption, e.Status, c.want, e.Summary)
			}
			if c.want == verdict.Fail && (e.Twin.PartsAt == nil || e.Twin.PartsAt.Layer != 1 || !strings.Contains(e.Summary, "first part from the reference at layer 1")) {
				t.Errorf("%s %s: the summary does not name layer 1: %s", prefix, c.corruption, e.Summary)
			}
		}
	}
}

// TestTwinOnARealShaped1B pins quantized gate 2 on real-shaped Llama-3.2-1B
// (random weights, 16 layers; python -m phase0_benchmodels.quant_bench e2e):
// a Q4NX bundle whose layer 7 has its nibbles in the wrong order FAILs and
// names layer 7 as where the hidden states first part.
func TestTwinOnARealShaped1B(t *testing.T) {
	e := JudgeE2E(Q4NX(), pinnedFacts(t, "twin-1b", "nibbles7"), 16)
	if e.Status != verdict.Fail || e.Twin.PartsAt == nil || e.Twin.PartsAt.Layer != 7 || !strings.Contains(e.Summary, "hidden states first part from the reference at layer 7") {
		t.Errorf("%s %q", e.Status, e.Summary)
	}
	for k := range 7 {
		// Before the corrupted layer the bundle is the twin, up to the bf16 rounding of its dequant.
		if c := e.Twin.Bundle.HiddenCosine[k]; math.Abs(c-e.Twin.Twin.HiddenCosine[k]) > 1e-3 {
			t.Errorf("layer %d: the bundle's cosine %v differs from the twin's %v before the corrupted layer", k, c, e.Twin.Twin.HiddenCosine[k])
		}
	}
	t.Logf("%s", e.Summary)
}

// The clean bundle of the same real-shaped Llama-3.2-1B (the nibbles7
// case's bundle before its corruption; worker facts pinned): it PASSes
// against its twin, where the fixed limits alone failed it (issue 37: the
// reference's flat top-5 reordered by 4-bit noise).
func TestTwinOnARealShaped1BClean(t *testing.T) {
	e := JudgeE2E(Q4NX(), pinnedFacts(t, "twin-1b", "clean"), 16)
	if e.Status != verdict.Pass || e.Twin == nil || e.Twin.PartsAt != nil {
		t.Errorf("%s %q", e.Status, e.Summary)
	}
	t.Logf("%s", e.Summary)
}

// TestTwinOnTheDefaultModel pins quantized gate 2 on the default model,
// SmolLM2-135M-Instruct (trained, 30 layers; python -m
// phase0_benchmodels.quant_twin --trained MODEL_DIR OUT --layer 15), each
// format's clean pack and the four one-layer corruptions of layer 15.
// Its weights come from a Q4_1 GGUF: they already sit on an affine 4-bit
// grid per 32 columns, which Q4NX's twin reproduces (0.45 % relative
// error on a projection) and Q4_0's and AWQ's do not (10 %). So Q4NX's
// twin is nearly lossless (KL 0.003) and every corruption FAILs naming
// layer 15; the Q4_0 and AWQ twins cost 0.46 and 0.60 nats over the
// passage's 17 tokens, and within that spread only Q4_0's swapped nibbles
// FAIL (the backstop). Those misses are what quantized gate 1, tensor by
// tensor, is for (docs/quantized.md).
func TestTwinOnTheDefaultModel(t *testing.T) {
	for _, c := range []struct {
		format Format
		prefix string
		fail   []string // the corruptions that FAIL; the others, and clean, PASS
	}{
		{q4nx{}, "Q4NX", []string{"nibbles", "doubled_scale", "swapped", "transposed"}},
		{q40{}, "Q4_0", []string{"nibbles"}},
		{awq{}, "AWQ", nil},
	} {
		for _, corruption := range []string{"clean", "nibbles", "doubled_scale", "swapped", "transposed"} {
			e := JudgeE2E(c.format, pinnedFacts(t, "twin-smollm2", c.prefix+"-"+corruption), 30)
			want := verdict.Pass
			if slices.Contains(c.fail, corruption) {
				want = verdict.Fail
			}
			if e.Status != want {
				t.Errorf("%s %s: %s, want %s: %s", c.prefix, corruption, e.Status, want, e.Summary)
			}
			if want == verdict.Fail && (e.Twin.PartsAt == nil || e.Twin.PartsAt.Layer < 15 || e.Twin.PartsAt.Layer > 16) {
				t.Errorf("%s %s: the summary does not name layer 15 or 16: %s", c.prefix, corruption, e.Summary)
			}
		}
	}
}
