package quant

import (
	"encoding/json"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/read/model"
)

// TestJudgeE2E: the calibrated numbers of SmolLM2 (quant_calibration.py)
// on either side of the limits.
func TestJudgeE2E(t *testing.T) {
	facts := func(klPrompt, klPassage, dNLL float64, qTop []int) *E2EFacts {
		f := &E2EFacts{Loader: "class Q4nxModel", Patched: 14, ReferenceTop: []int{5, 6, 7, 8, 9}, QuantizedTop: qTop, KLPrompt: klPrompt, PassageTokens: 5}
		for range 4 {
			f.KLPassage = append(f.KLPassage, klPassage)
			f.ReferenceNLL = append(f.ReferenceNLL, 2)
			f.QuantizedNLL = append(f.QuantizedNLL, 2+dNLL)
		}
		return f
	}
	for _, c := range []struct {
		name  string
		facts *E2EFacts
		want  verdict.Status
		names string
	}{
		{"clean Q4NX off-grid", facts(0.74, 0.79, 0.15, []int{6, 5, 7, 8, 9}), verdict.Pass, ""},
		{"random projection", facts(9.9, 3.5, 2.6, []int{1, 2, 3, 4, 5}), verdict.Fail, "top-1 on the canonical prompt"},
		{"doubled KL only", facts(0.5, 1.6, 0.1, []int{5, 6, 7, 8, 9}), verdict.Fail, "mean KL divergence over the calibration passage"},
		{"perplexity only", facts(0.5, 0.5, 0.5, []int{5, 6, 7, 8, 9}), verdict.Fail, "passage perplexity ratio"},
	} {
		e := JudgeE2E(Q4NX(), c.facts, 2)
		if e.Status != c.want || !strings.Contains(e.Summary, c.names) {
			t.Errorf("%s: %s %q, want %s naming %q", c.name, e.Status, e.Summary, c.want, c.names)
		}
		// A failing gate's summary keeps every figure in sight, not only the failing one.
		if !strings.Contains(e.Summary, "KL prompt ") || !strings.Contains(e.Summary, "perplexity ratio ") {
			t.Errorf("%s: the summary hides the figures: %q", c.name, e.Summary)
		}
	}
	if e := JudgeE2E(Q4NX(), facts(0.1, 0.1, 0, []int{5}), 3); e.Status != verdict.Fail || !strings.Contains(e.Summary, "patched 14 projections") {
		t.Errorf("a loader missing a layer passes: %s", e.Summary)
	}
}

// TestConfigFunctionConstants: a *_config() value that disagrees with
// config.json fails naming the function, the field and both values.
func TestConfigFunctionConstants(t *testing.T) {
	consts := ConfigFunctionConstants("llama31_8b_config", map[string]json.RawMessage{
		"n_layers": json.RawMessage("32"), "head_dim": json.RawMessage("128"), "dtype": json.RawMessage(`"bfloat16"`)})
	c := CheckConstants("llama31_8b_q4nx_weights.py", consts, &model.Config{NLayers: 16, HeadDim: 128}, nil)
	if c.Status != verdict.Fail || len(c.Checked) != 2 || len(c.Findings) != 1 ||
		!strings.Contains(c.Findings[0], "llama31_8b_config().n_layers = 32, but the reference's config.json gives n_layers = 16") {
		t.Errorf("%s %q %+v", c.Status, c.Findings, c.Checked)
	}
}
