package report

import (
	"fmt"

	"phase0/judge"
	"phase0/ops"
	"phase0/verdict"
)

// Baseline is gates.hf_baseline: the HF bf16 reference on the canonical prompt.
type Baseline struct {
	verdict.Section
	Runner         string         `json:"runner"`
	RunnerPath     string         `json:"runner_path"`
	Prompt         string         `json:"prompt"`
	PromptStyle    string         `json:"prompt_style"`
	Tokens         []int          `json:"tokens"`
	Top1Token      int            `json:"top1_token"`
	Top1Text       string         `json:"top1_text"`
	Top5           []judge.Ranked `json:"top5"`
	Top10          []judge.Ranked `json:"top10"`
	Logits         judge.Stats    `json:"logits"`
	Reasons        []string       `json:"reasons"`
	Warnings       []string       `json:"warnings"`
	Decode         *Decode        `json:"decode,omitempty"`
	Seconds        float64        `json:"seconds"`
	SecondsLoad    float64        `json:"seconds_load"`
	SecondsPrefill float64        `json:"seconds_prefill"`
	Torch          string         `json:"torch_version,omitempty"`
	Transformers   string         `json:"transformers_version,omitempty"`

	// Calibration is the perplexity of the fixed English passage (the degeneracy rule).
	Calibration        *judge.Calibration `json:"calibration,omitempty"`
	SecondsCalibration float64            `json:"seconds_calibration"`
}

// Decode is the optional greedy continuation.
type Decode = ops.Decode

// CalibrationLine is the one-line account of the perplexity rule that every
// report format shows.
func CalibrationLine(c *judge.Calibration) string {
	verdict := "within"
	if !c.Pass {
		verdict = "ABOVE"
	}
	return fmt.Sprintf("calibration passage (%d tokens, %d predicted): perplexity %.4g, %s the limit %.4g = %g × V %d (ratio perplexity/V %.3g); passage %q",
		c.Tokens, c.Predicted, c.Perplexity, verdict, c.Limit, c.MaxRatio, c.VocabSize, c.Ratio, c.Passage)
}
