package orchestrator

import (
	"fmt"

	"phase0/judge"
	"phase0/ops"
)

// judgeCalibration applies the perplexity rule to the passage facts, records
// the result in the section and returns why it fails ("" when it passes).
func (b *Baseline) judgeCalibration(p *ops.PassageFacts, vocabSize int, maxRatio float64) string {
	if p == nil {
		return "the runner reported no calibration passage facts, so the perplexity rule could not be applied"
	}
	c, why := judge.Perplexity(judge.PassageInput{
		Passage: p.Passage, Tokens: p.Tokens, NLL: p.NLL, VocabSize: vocabSize, MaxRatio: maxRatio,
	})
	b.Calibration = &c
	return why
}

// calibrationLine is the one-line account of the perplexity rule that every
// report format shows.
func calibrationLine(c *judge.Calibration) string {
	verdict := "within"
	if !c.Pass {
		verdict = "ABOVE"
	}
	return fmt.Sprintf("calibration passage (%d tokens, %d predicted): perplexity %.4g, %s the limit %.4g = %g × V %d (ratio perplexity/V %.3g); passage %q",
		c.Tokens, c.Predicted, c.Perplexity, verdict, c.Limit, c.MaxRatio, c.VocabSize, c.Ratio, c.Passage)
}
