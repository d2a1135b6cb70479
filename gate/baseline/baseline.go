package baseline

import (
	"fmt"

	"phase0/gate/verdict"
)

// Baseline is gates.hf_baseline, gate 2's section: the HF bf16 model on
// the canonical prompt and the calibration passage, judged.
type Baseline struct {
	verdict.Section
	Runner         string        `json:"runner"`
	RunnerPath     string        `json:"runner_path"`
	Prompt         string        `json:"prompt"`
	PromptStyle    string        `json:"prompt_style"`
	Tokens         []int         `json:"tokens"`
	Top1Token      int           `json:"top1_token"`
	Top1Text       string        `json:"top1_text"`
	Top5           []Ranked      `json:"top5"`
	Top10          []Ranked      `json:"top10"`
	Logits         Stats         `json:"logits"`
	Reasons        []string      `json:"reasons"`
	Warnings       []string      `json:"warnings"`
	Decode         *Continuation `json:"decode,omitempty"`
	Seconds        float64       `json:"seconds"`
	SecondsLoad    float64       `json:"seconds_load"`
	SecondsPrefill float64       `json:"seconds_prefill"`
	Torch          string        `json:"torch_version,omitempty"`
	Transformers   string        `json:"transformers_version,omitempty"`

	// Calibration is the perplexity of the fixed English passage (the degeneracy rule).
	Calibration        *Calibration `json:"calibration,omitempty"`
	SecondsCalibration float64      `json:"seconds_calibration"`
}

// Continuation is the optional greedy continuation of the canonical prompt.
type Continuation struct {
	IDs  []int  `json:"ids"`
	Text string `json:"text"`
}

// NewBaseline is an empty section: no tokens, no top-1 (-1), not failed.
func NewBaseline() *Baseline {
	return &Baseline{Section: verdict.NewSection(), Tokens: []int{}, Top5: []Ranked{}, Top10: []Ranked{}, Reasons: []string{}, Warnings: []string{}, Top1Token: -1}
}

// Fail records why the gate failed; the first reason is the summary.
func (b *Baseline) Fail(reasons ...string) {
	for _, r := range reasons {
		b.Reasons = append(b.Reasons, r)
		b.FailWith("%s", r)
	}
	b.Summary = b.Reasons[0]
}

// Facts are what gate 2 judges: the canonical prompt's prefill, the runner
// that made it, the greedy continuation and the calibration passage.
type Facts struct {
	Prefill Input
	Runner  string        // named in the summary
	Decode  *Continuation // nil when no continuation was asked for
	// Passage is nil when the runner reported no calibration passage facts:
	// the perplexity rule cannot be applied, so the gate fails.
	Passage *PassageInput
}

// Gate2 applies every gate-2 rule to the facts and fills b (a NewBaseline,
// possibly with the runner's descriptive fields already set): the logits'
// health, the continuation's repetition warning, the passage's perplexity.
func Gate2(b *Baseline, f Facts) {
	b.Runner = f.Runner
	v := Judge(f.Prefill)
	b.Top1Token, b.Top1Text, b.Logits = v.Top1, v.Top1Text, v.Stats
	b.Top10 = append(b.Top10, v.Top...)
	b.Top5 = append(b.Top5, v.Top[:min(5, len(v.Top))]...)
	b.Warnings = append(b.Warnings, v.Warnings...)
	if f.Decode != nil {
		b.Decode = f.Decode
		if loop, why := Repetition(f.Decode.IDs); loop {
			b.Warnings = append(b.Warnings, "greedy continuation: "+why)
		}
	}
	failed := v.Reasons
	if why := b.calibrate(f.Passage); why != "" {
		failed = append(failed, why)
	}
	if len(failed) > 0 {
		b.Fail(failed...)
		return
	}
	c := b.Calibration
	b.Summary = fmt.Sprintf("top-1 %d %q p=%.3f, entropy %.2f nats, passage perplexity %.4g (limit %.4g = %g × V %d), %s runner",
		b.Top1Token, b.Top1Text, b.Logits.Top1Prob, b.Logits.Entropy, c.Perplexity, c.Limit, c.MaxRatio, c.VocabSize, b.Runner)
}

// calibrate applies the perplexity rule to the passage, records the result
// in the section and returns why it fails ("" when it passes).
func (b *Baseline) calibrate(p *PassageInput) string {
	if p == nil {
		return "the runner reported no calibration passage facts, so the perplexity rule could not be applied"
	}
	c, why := Perplexity(*p)
	b.Calibration = &c
	return why
}
