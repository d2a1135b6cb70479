package baseline

import (
	"math"
	"strings"
	"testing"

	"phase0/gate/verdict"
)

// facts is a healthy prefill of 1000 logits with a passage of the given
// perplexity (one predicted token).
func facts(ppl float64) Facts {
	return Facts{Prefill: base(peaked(1000, 42), 42), Runner: "bundled",
		Passage: &PassageInput{Passage: "The sun rose.", Tokens: []int{1, 2}, NLL: nlls(math.Log(ppl)), VocabSize: 1000}}
}

func TestGate2(t *testing.T) {
	t.Run("healthy logits, trained passage: PASS with the summary naming both", func(t *testing.T) {
		b := NewBaseline()
		Gate2(b, facts(20))
		if b.Status != verdict.Pass || len(b.Reasons) != 0 || b.Top1Token != 42 || len(b.Top10) != 10 || len(b.Top5) != 5 || b.Calibration == nil {
			t.Fatalf("section %+v", b)
		}
		for _, want := range []string{`top-1 42 " Paris"`, "passage perplexity 20 (limit 100 = 0.1 × V 1000)", "bundled runner"} {
			if !strings.Contains(b.Summary, want) {
				t.Errorf("summary %q lacks %q", b.Summary, want)
			}
		}
	})
	t.Run("random passage: FAIL, the perplexity reason is the summary", func(t *testing.T) {
		b := NewBaseline()
		Gate2(b, facts(600))
		if b.Status != verdict.Fail || len(b.Reasons) != 1 || b.Summary != b.Reasons[0] || !strings.Contains(b.Summary, "exceeds the limit 100") {
			t.Errorf("status %s, reasons %q, summary %q", b.Status, b.Reasons, b.Summary)
		}
	})
	t.Run("no passage facts: FAIL, the rule could not be applied", func(t *testing.T) {
		f := facts(20)
		f.Passage = nil
		b := NewBaseline()
		Gate2(b, f)
		if b.Status != verdict.Fail || b.Calibration != nil || !strings.Contains(b.Summary, "no calibration passage facts") {
			t.Errorf("status %s, calibration %+v, summary %q", b.Status, b.Calibration, b.Summary)
		}
	})
	t.Run("unhealthy logits and a random passage: both reasons, logits first", func(t *testing.T) {
		f := facts(600)
		f.Prefill.Logits[7] = float32(math.NaN())
		b := NewBaseline()
		Gate2(b, f)
		if b.Status != verdict.Fail || len(b.Reasons) != 2 || !strings.Contains(b.Reasons[1], "exceeds the limit") || b.Summary != b.Reasons[0] {
			t.Errorf("status %s, reasons %q", b.Status, b.Reasons)
		}
	})
	t.Run("a looping continuation warns, never fails", func(t *testing.T) {
		f := facts(20)
		f.Decode = &Continuation{IDs: []int{5, 6, 7, 8, 9, 9, 9, 9, 9, 9}, Text: "x"}
		b := NewBaseline()
		Gate2(b, f)
		if b.Status != verdict.Pass || b.Decode != f.Decode || len(b.Warnings) != 1 || !strings.HasPrefix(b.Warnings[0], "greedy continuation: ") {
			t.Errorf("status %s, decode %+v, warnings %q", b.Status, b.Decode, b.Warnings)
		}
	})
}
