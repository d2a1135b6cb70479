package orchestrator

import (
	"phase0/report"

	"phase0/judge"
	"phase0/ops"
)

// judgeCalibration applies the perplexity rule to the passage facts, records
// the result in the section and returns why it fails ("" when it passes).
func judgeCalibration(b *report.Baseline, p *ops.PassageFacts, vocabSize int, maxRatio float64) string {
	if p == nil {
		return "the runner reported no calibration passage facts, so the perplexity rule could not be applied"
	}
	c, why := judge.Perplexity(judge.PassageInput{
		Passage: p.Passage, Tokens: p.Tokens, NLL: p.NLL, VocabSize: vocabSize, MaxRatio: maxRatio,
	})
	b.Calibration = &c
	return why
}
