package orchestrator

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"phase0/gate/baseline"
	"phase0/gate/verdict"
	"phase0/output/report"
	"phase0/wire"
)

// passageResult is an ops.baseline answer with healthy logits and the given
// per-token NLLs on the calibration passage.
func passageResult(vocab int, nll ...float64) (*wire.BaselineResult, []float32) {
	logits := make([]float32, vocab)
	for i := range logits {
		logits[i] = float32(i%7) / 7
	}
	logits[42] = 9
	res := &wire.BaselineResult{Runner: "bundled", Prompt: "p", Tokens: []int{1, 2}, Top1Token: 42, VocabSize: vocab, TokenizerSize: vocab}
	res.Calibration = &wire.PassageFacts{Passage: "The sun rose.", Tokens: make([]int, len(nll)+1)}
	for i := range nll {
		res.Calibration.NLL = append(res.Calibration.NLL, &nll[i])
	}
	return res, logits
}

func TestBaselinePerplexityRuleInEveryFormat(t *testing.T) {
	for _, tc := range []struct {
		name     string
		nll      []float64
		ratio    float64
		status   verdict.Status
		contains []string
	}{
		{"trained", []float64{math.Log(20), math.Log(20)}, 0, verdict.Pass, []string{"perplexity 20", "limit 51.2", "0.1 × V 512"}},
		{"random", []float64{math.Log(600), math.Log(600)}, 0, verdict.Fail, []string{"calibration passage perplexity 600 exceeds the limit 51.2"}},
		{"random, looser limit", []float64{math.Log(600)}, 2, verdict.Pass, []string{"perplexity 600", "limit 1024"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, logits := passageResult(512, tc.nll...)
			b := baseline.FromRunner(res, logits, 512, 1, tc.ratio)
			if b.Status != tc.status {
				t.Fatalf("status %s, want %s; reasons %q", b.Status, tc.status, b.Reasons)
			}
			for _, want := range tc.contains {
				if !strings.Contains(b.Summary, want) {
					t.Errorf("summary %q lacks %q", b.Summary, want)
				}
			}
			r := &report.Report{Command: "baseline", Model: "m", Status: b.Status}
			r.Gates.HFBaseline = b
			text, md := r.Text(), r.Markdown("")
			counts := fmt.Sprintf("(%d tokens, %d predicted)", len(tc.nll)+1, len(tc.nll))
			for _, want := range []string{`passage "The sun rose."`, counts, "limit", "× V 512", "ratio perplexity/V"} {
				if !strings.Contains(text, want) {
					t.Errorf("text report lacks %q:\n%s", want, text)
				}
			}
			if !strings.Contains(md, "Calibration passage (") || !strings.Contains(md, "| Perplexity | Limit | V | Max ratio | Perplexity / V |") || !strings.Contains(md, "| 512 |") {
				t.Errorf("markdown lacks the calibration table:\n%s", md)
			}
			js, err := r.JSON()
			if err != nil {
				t.Fatal(err)
			}
			var back struct {
				Gates struct {
					HFBaseline struct {
						Calibration map[string]any `json:"calibration"`
					} `json:"hf_baseline"`
				} `json:"gates"`
			}
			if err := json.Unmarshal(js, &back); err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"passage", "tokens", "perplexity", "limit", "vocab_size", "ratio", "max_ratio"} {
				if _, ok := back.Gates.HFBaseline.Calibration[key]; !ok {
					t.Errorf("JSON calibration lacks %s: %s", key, js)
				}
			}
		})
	}
}

func TestBaselineWithoutPassageFactsFails(t *testing.T) {
	res, logits := passageResult(512, 1)
	res.Calibration = nil
	b := baseline.FromRunner(res, logits, 512, 1, 0)
	if b.Status != verdict.Fail || !strings.Contains(b.Summary, "no calibration passage facts") {
		t.Errorf("status %s, summary %q", b.Status, b.Summary)
	}
}

// TestPerplexityLimitUsesTheCheckpointsVocab: a hand-written module's Config
// may say another vocab_size (upstream's 151,936 over a 512-token checkpoint);
// the logits and the limit are the checkpoint's.
func TestPerplexityLimitUsesTheCheckpointsVocab(t *testing.T) {
	res, logits := passageResult(512, math.Log(600), math.Log(600))
	res.VocabSize = 151936 // what the module's LlamaConfig() said
	b := baseline.FromRunner(res, logits, 512, 1, 0)
	if b.Status != verdict.Fail || b.Calibration == nil || b.Calibration.VocabSize != 512 || !strings.Contains(b.Summary, "exceeds the limit 51.2") {
		t.Errorf("status %s, calibration %+v, summary %q", b.Status, b.Calibration, b.Summary)
	}
}
