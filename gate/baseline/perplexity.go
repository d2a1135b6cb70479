package baseline

import (
	"fmt"
	"math"
)

// DefaultMaxPerplexityRatio is the default limit on the calibration
// passage's perplexity as a fraction of the vocabulary size. Trained models
// sit far below it (SmolLM2-135M: ~23 for V = 49,152, limit 4,915); random
// initialisations of every family sit at or above V (README, "What gate 2
// checks"), where entropy and top-1 probability cannot separate them.
const DefaultMaxPerplexityRatio = 0.1

// PassageInput is what the runner measured on the calibration passage.
type PassageInput struct {
	Passage string
	Tokens  []int
	// NLL per predicted token (natural log); nil where the runner saw a
	// non-finite value.
	NLL       []*float64
	VocabSize int     // V, from the config
	MaxRatio  float64 // the limit is MaxRatio × V; <= 0 means DefaultMaxPerplexityRatio
}

// Calibration is the judged perplexity of the calibration passage.
type Calibration struct {
	Passage    string  `json:"passage"`
	Tokens     int     `json:"tokens"`    // passage length in tokens
	Predicted  int     `json:"predicted"` // tokens with an NLL (all but the first)
	MeanNLL    float64 `json:"mean_nll"`
	Perplexity float64 `json:"perplexity"` // exp(mean NLL); 0 when not computable
	VocabSize  int     `json:"vocab_size"`
	Ratio      float64 `json:"ratio"`     // perplexity / V
	MaxRatio   float64 `json:"max_ratio"` // the configured limit as a fraction of V
	Limit      float64 `json:"limit"`     // MaxRatio × V
	Pass       bool    `json:"pass"`
}

// Perplexity computes exp(mean NLL) of the passage and applies the rule
// perplexity <= MaxRatio × V. reason is "" when it passes.
func Perplexity(in PassageInput) (c Calibration, reason string) {
	ratio := in.MaxRatio
	if ratio <= 0 {
		ratio = DefaultMaxPerplexityRatio
	}
	c = Calibration{
		Passage: in.Passage, Tokens: len(in.Tokens), Predicted: len(in.NLL),
		VocabSize: in.VocabSize, MaxRatio: ratio, Limit: ratio * float64(in.VocabSize),
	}
	if in.VocabSize <= 0 {
		return c, fmt.Sprintf("calibration passage: vocab_size %d is not positive, so the perplexity limit is undefined", in.VocabSize)
	}
	if len(in.NLL) == 0 {
		return c, fmt.Sprintf("calibration passage: the runner returned no token log-likelihoods for %d passage tokens", len(in.Tokens))
	}
	var sum float64
	bad := 0
	for _, x := range in.NLL {
		if x == nil || math.IsNaN(*x) || math.IsInf(*x, 0) {
			bad++
			continue
		}
		sum += *x
	}
	if bad > 0 {
		return c, fmt.Sprintf("calibration passage: %d of %d token log-likelihoods are not finite", bad, len(in.NLL))
	}
	c.MeanNLL = sum / float64(len(in.NLL))
	// Clamped: JSON has no +Inf, and any value this large fails anyway.
	c.Perplexity = math.Min(math.Exp(c.MeanNLL), math.MaxFloat64)
	c.Ratio = c.Perplexity / float64(in.VocabSize)
	if c.Perplexity > c.Limit {
		return c, fmt.Sprintf("calibration passage perplexity %.4g exceeds the limit %.4g (%g × vocab_size %d; ratio %.3g): the model does not predict plain English (random or scrambled weights, or a tokenizer that is not the model's)",
			c.Perplexity, c.Limit, ratio, in.VocabSize, c.Ratio)
	}
	c.Pass = true
	return c, ""
}
