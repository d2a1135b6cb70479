package quant

import (
	"encoding/json"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/read/model"
	"phase0/wire"
)

// twinFacts are synthetic facts of a 2-layer model over n passage tokens:
// the twin's per-token KL alternates lo/hi around klTwin, the bundle's is
// the twin's times ratio plus shift; top-1 agreement drops by lost tokens.
func twinFacts(n int, klTwin, ratio, shift float64, lost int) *wire.QuantE2EFacts {
	f := &wire.QuantE2EFacts{Loader: "class Q4nxModel", Patched: 14, TwinQuantized: 14, TwinRule: "affine 4-bit g32",
		ReferenceTop: []int{5, 6, 7, 8, 9}, QuantizedTop: []int{5, 6, 7, 8, 9}, TwinTop: []int{5, 6, 7, 8, 9}, PassageTokens: n + 1,
		HiddenCosine: []float64{0.99, 0.98}, HiddenCosineTwin: []float64{0.99, 0.98}}
	for i := range n {
		t := klTwin * (0.5 + float64(i%2))
		f.KLPassageTwin = append(f.KLPassageTwin, t)
		f.KLPassage = append(f.KLPassage, t*ratio+shift)
		f.ReferenceNLL = append(f.ReferenceNLL, 2)
		f.TwinNLL = append(f.TwinNLL, 2+t)
		f.QuantizedNLL = append(f.QuantizedNLL, 2+t*ratio+shift)
		f.ReferenceArgmax = append(f.ReferenceArgmax, i)
		f.TwinArgmax = append(f.TwinArgmax, i)
		q := i
		if i < lost {
			q = -1
		}
		f.QuantizedArgmax = append(f.QuantizedArgmax, q)
		f.DPPassage = append(f.DPPassage, 0.01*ratio)
		f.DPPassageTwin = append(f.DPPassageTwin, 0.01)
	}
	return f
}

// TestJudgeE2E: the bundle judged against its twin, paired per token.
func TestJudgeE2E(t *testing.T) {
	flat := twinFacts(100, 0.12, 1, 0, 0)
	// The flat distribution: the reference's top-1 leaves both the bundle's and the twin's top-5.
	flat.QuantizedTop, flat.TwinTop = []int{1, 2, 3, 4, 30992}, []int{2, 1, 3, 4, 11}
	parts := twinFacts(100, 0.12, 1, 0, 0)
	parts.HiddenCosine = []float64{0.99, 0.41}
	for _, c := range []struct {
		name  string
		facts *wire.QuantE2EFacts
		want  verdict.Status
		names string
	}{
		{"the twin itself", twinFacts(100, 0.12, 1, 0, 0), verdict.Pass, "judged against its affine 4-bit g32 twin"},
		{"a third worse than the twin", twinFacts(100, 0.12, 1.3, 0, 0), verdict.Pass, ""},
		{"better than the twin (a searched or activation-aware pack)", twinFacts(100, 0.12, 0.5, 0, 10), verdict.Pass, ""},
		{"two near-zero figures", twinFacts(100, 1e-4, 3, 1e-4, 0), verdict.Pass, ""},
		{"a flat prompt both miss", flat, verdict.Pass, ""},
		{"twice the twin's KL", twinFacts(100, 0.12, 2, 0, 0), verdict.Fail, "KL(bf16 ‖ dequantized) over the passage's 100 tokens is worse than the twin's"},
		{"top-1 lost on a fifth of the tokens", twinFacts(100, 0.12, 1, 0, 20), verdict.Fail, "top-1 over the passage agrees with bf16 on 80.0 % of 100 tokens against the twin's 100.0 %"},
		{"hidden states part at layer 1", parts, verdict.Fail, "hidden states first part from the reference at layer 1: cosine 0.41 vs the twin's 0.98"},
		// The backstop: a twin as broken as the bundle says nothing; the absolute bound still fails it.
		{"a reference 4 bits cannot represent", twinFacts(100, 2, 1, 0, 0), verdict.Fail, "backstop: mean KL divergence over the calibration passage (100 positions) 2 nats > 1.5 (max 3); the twin too (2)"},
	} {
		e := JudgeE2E(Q4NX(), c.facts, 2)
		if e.Status != c.want || !strings.Contains(e.Summary, c.names) {
			t.Errorf("%s: %s %q, want %s naming %q", c.name, e.Status, e.Summary, c.want, c.names)
		}
		// The summary keeps both sides' figures in sight, whatever the verdict.
		if !strings.Contains(e.Summary, "vs the twin's") || !strings.Contains(e.Summary, "perplexity ratio ") || e.Twin == nil {
			t.Errorf("%s: the summary hides the figures: %q", c.name, e.Summary)
		}
	}
	short := twinFacts(100, 0.1, 1, 0, 0)
	short.Patched = 12
	if e := JudgeE2E(Q4NX(), short, 2); e.Status != verdict.Fail || !strings.Contains(e.Summary, "patched 12 projections") {
		t.Errorf("a loader missing a layer passes: %s", e.Summary)
	}
}

// TestJudgeE2EWithoutATwin: no twin is "could not evaluate" naming why,
// never a fall-back to the fixed limits.
func TestJudgeE2EWithoutATwin(t *testing.T) {
	missing := twinFacts(50, 0.1, 1, 0, 0)
	missing.TwinError, missing.TwinQuantized = "the reference /m lacks model.layers.1.mlp.up_proj.weight, which the twin needs", 0
	if e := JudgeE2E(Q4NX(), missing, 2); e.Status != verdict.Error || !strings.Contains(e.Summary, "could not evaluate quantized gate 2: the reference /m lacks model.layers.1.mlp.up_proj.weight") {
		t.Errorf("a reference missing a tensor: %s %q", e.Status, e.Summary)
	}
	if e := JudgeE2E(unknownRule{}, twinFacts(50, 0.1, 1, 0, 0), 2); e.Status != verdict.Error || !strings.Contains(e.Summary, "format Q9 has no quantization rule phase0 knows") {
		t.Errorf("a format without a rule: %s %q", e.Status, e.Summary)
	}
	short := twinFacts(50, 0.1, 1, 0, 0)
	short.TwinQuantized = 13
	if e := JudgeE2E(Q4NX(), short, 2); e.Status != verdict.Error || !strings.Contains(e.Summary, "built the twin from 13 projections, expected 14") {
		t.Errorf("a partial twin: %s %q", e.Status, e.Summary)
	}
}

// unknownRule is a format whose quantization rule phase0 does not know.
type unknownRule struct{ q4nx }

func (unknownRule) Name() string           { return "Q9" }
func (unknownRule) Bound() wire.QuantBound { return wire.QuantBound{} }

// TestConfigFunctionConstants: a *_config() value that disagrees with
// config.json fails naming the function, the field and both values.
func TestConfigFunctionConstants(t *testing.T) {
	consts := ConfigFunctionConstants("llama31_8b_config", map[string]json.RawMessage{
		"n_layers": json.RawMessage("32"), "head_dim": json.RawMessage("128"), "dtype": json.RawMessage(`"bfloat16"`)})
	c := checkConstants("llama31_8b_q4nx_weights.py", consts, &model.Config{NLayers: 16, HeadDim: 128}, nil)
	if c.Status != verdict.Fail || len(c.Checked) != 2 || len(c.Findings) != 1 ||
		!strings.Contains(c.Findings[0], "llama31_8b_config().n_layers = 32, but the reference's config.json gives n_layers = 16") {
		t.Errorf("%s %q %+v", c.Status, c.Findings, c.Checked)
	}
}

// TestAgainstGate1: hidden states that part at a layer gate 1 passed point
// at what gate 1 cannot see; a layer gate 1 failed adds nothing.
func TestAgainstGate1(t *testing.T) {
	f := twinFacts(100, 0.12, 1, 0, 0)
	f.HiddenCosine = []float64{0.99, 0.41}
	rows := func(s verdict.Status) *Weights {
		return &Weights{Rows: []Row{{Layer: 0, Tensor: "wq", Status: verdict.Pass}, {Layer: 1, Tensor: "wq", Status: verdict.Pass}, {Layer: 1, Tensor: "w_down", Status: s}}}
	}
	e := JudgeE2E(Q4NX(), f, 2)
	e.AgainstGate1(rows(verdict.Pass))
	if !strings.Contains(e.Summary, "gate 1 passed all 2 tensors of layer 1: what parts there is what gate 1 cannot see (a constant, the RoPE table") {
		t.Errorf("a layer gate 1 passed: %q", e.Summary)
	}
	e = JudgeE2E(Q4NX(), f, 2)
	e.AgainstGate1(rows(verdict.Fail))
	if strings.Contains(e.Summary, "gate 1 passed") || len(e.Findings) != 1 {
		t.Errorf("a layer gate 1 failed: %q %q", e.Summary, e.Findings)
	}
}
