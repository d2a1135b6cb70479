package quant

import (
	"strings"
	"testing"

	"phase0/verdict"
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
	}
	if e := JudgeE2E(Q4NX(), facts(0.1, 0.1, 0, []int{5}), 3); e.Status != verdict.Fail || !strings.Contains(e.Summary, "patched 14 projections") {
		t.Errorf("a loader missing a layer passes: %s", e.Summary)
	}
}
