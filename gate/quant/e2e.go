package quant

import (
	"fmt"
	"math"
	"slices"

	"phase0/gate/verdict"
	"phase0/read/tensornames"
)

// E2EFacts are the worker's answer for quantized gate 2: the reference's
// transformers model prefilled as loaded (bf16) and again with every
// projection swapped for the folder's dequantized one, on the canonical
// prompt and on the calibration passage.
type E2EFacts struct {
	Loader               string    `json:"loader"`
	Patched              int       `json:"patched"`
	HeadPatched          bool      `json:"head_patched"`
	FromGate1            bool      `json:"from_gate_1"`
	ReferenceTop         []int     `json:"reference_top"`
	ReferenceTopLogprobs []float64 `json:"reference_top_logprobs"`
	QuantizedTop         []int     `json:"quantized_top"`
	QuantizedTopLogprobs []float64 `json:"quantized_top_logprobs"`
	KLPrompt             float64   `json:"kl_prompt"`
	PassageTokens        int       `json:"passage_tokens"`
	KLPassage            []float64 `json:"kl_passage"`
	ReferenceNLL         []float64 `json:"reference_nll"`
	QuantizedNLL         []float64 `json:"quantized_nll"`
	ReferenceArgmax      []int     `json:"reference_argmax"`
	QuantizedArgmax      []int     `json:"quantized_argmax"`
}

// E2ELimits are quantized gate 2's limits for one format.
type E2ELimits struct {
	// MaxKL bounds KL(bf16 ‖ quantized) of the next-token distribution at
	// the prompt's last position and its mean over the passage, in nats.
	MaxKL float64 `json:"max_kl"`
	// MaxPerplexityRatio bounds the passage perplexity, quantized over bf16.
	MaxPerplexityRatio float64 `json:"max_perplexity_ratio"`
	Calibration        string  `json:"calibration"`
}

// EndToEnd is quantized gate 2.
type EndToEnd struct {
	verdict.Section
	Format  string `json:"format"`
	Loader  string `json:"loader"`
	Patched int    `json:"projections_patched"`
	// HeadPatched says the loader's lm_head (a quantized copy of a tied
	// head, or an untied head) differed from the model's and was patched in.
	HeadPatched bool `json:"lm_head_patched"`
	// FromGate1 says the tensors patched in are the ones gate 1 judged,
	// kept in the worker: the folder's loader ran once for both gates.
	FromGate1 bool      `json:"from_gate_1"`
	Limits    E2ELimits `json:"limits"`
	// Top1 is each side's top-1 at the prompt's last position; the rule
	// is verify's: each within the other's top-5.
	ReferenceTop1 int     `json:"reference_top1"`
	QuantizedTop1 int     `json:"quantized_top1"`
	Top1Agrees    bool    `json:"top1_agrees"`
	KLPrompt      float64 `json:"kl_prompt"`
	KLPassageMean float64 `json:"kl_passage_mean"`
	KLPassageMax  float64 `json:"kl_passage_max"`
	// PerplexityRatio is exp(mean NLL quantized − mean NLL bf16) on the passage.
	PerplexityRatio float64 `json:"perplexity_ratio"`
	// PassageTop1Agreement is the share of passage positions whose argmax
	// agree (informational: a near-tie flips it without harm).
	PassageTop1Agreement float64 `json:"passage_top1_agreement"`
}

// JudgeE2E judges quantized gate 2 for a folder of format f, against the
// number of projections the reference has (nLayers × 7).
func JudgeE2E(f Format, facts *E2EFacts, nLayers int) *EndToEnd {
	lim := f.E2ELimits()
	e := &EndToEnd{Section: verdict.NewSection(), Format: f.Name(), Loader: facts.Loader, Patched: facts.Patched, HeadPatched: facts.HeadPatched, FromGate1: facts.FromGate1, Limits: lim,
		KLPrompt: facts.KLPrompt}
	if want := nLayers * len(tensornames.Projections()); facts.Patched != want {
		e.FailWith("%s patched %d projections into the reference model, expected %d (%d layers × %d)", facts.Loader, facts.Patched, want, nLayers, len(tensornames.Projections()))
	}
	if len(facts.ReferenceTop) == 0 || len(facts.QuantizedTop) == 0 {
		e.FailWith("the worker reported no top-5 for the prompt (reference %d ids, quantized %d)", len(facts.ReferenceTop), len(facts.QuantizedTop))
		e.Summary = e.Findings[0]
		return e
	}
	e.ReferenceTop1, e.QuantizedTop1 = facts.ReferenceTop[0], facts.QuantizedTop[0]
	e.Top1Agrees = slices.Contains(facts.QuantizedTop, e.ReferenceTop1) && slices.Contains(facts.ReferenceTop, e.QuantizedTop1)
	if !e.Top1Agrees {
		e.FailWith("top-1 on the canonical prompt: bf16 %d (top-5 %v), dequantized %d (top-5 %v): one side's top-1 is not in the other's top-5 (verify's rule)",
			e.ReferenceTop1, facts.ReferenceTop, e.QuantizedTop1, facts.QuantizedTop)
	}
	if !finite(facts.KLPrompt) || facts.KLPrompt > lim.MaxKL {
		e.FailWith("KL divergence at the prompt's next token %.4g nats > limit %g", facts.KLPrompt, lim.MaxKL)
	}
	n := len(facts.KLPassage)
	if n == 0 || len(facts.ReferenceNLL) != n || len(facts.QuantizedNLL) != n {
		e.FailWith("passage facts disagree in length: KL %d, bf16 NLL %d, dequantized NLL %d positions", n, len(facts.ReferenceNLL), len(facts.QuantizedNLL))
	} else {
		var sum, refNLL, qNLL float64
		for i, kl := range facts.KLPassage {
			sum += kl
			e.KLPassageMax = math.Max(e.KLPassageMax, kl)
			refNLL += facts.ReferenceNLL[i]
			qNLL += facts.QuantizedNLL[i]
		}
		e.KLPassageMean = sum / float64(n)
		e.PerplexityRatio = math.Exp((qNLL - refNLL) / float64(n))
		if !finite(e.KLPassageMean) || e.KLPassageMean > lim.MaxKL {
			e.FailWith("mean KL divergence over the calibration passage (%d positions) %.4g nats > limit %g (max %.4g)", n, e.KLPassageMean, lim.MaxKL, e.KLPassageMax)
		}
		if !finite(e.PerplexityRatio) || e.PerplexityRatio > lim.MaxPerplexityRatio {
			e.FailWith("passage perplexity ratio (dequantized / bf16) %.4g > limit %g", e.PerplexityRatio, lim.MaxPerplexityRatio)
		}
	}
	if m := len(facts.ReferenceArgmax); m > 0 && m == len(facts.QuantizedArgmax) {
		same := 0
		for i := range m {
			if facts.ReferenceArgmax[i] == facts.QuantizedArgmax[i] {
				same++
			}
		}
		e.PassageTop1Agreement = float64(same) / float64(m)
	}
	figures := fmt.Sprintf("KL prompt %.4g, passage mean %.4g nats (limit %g), perplexity ratio %.4g (limit %g)",
		e.KLPrompt, e.KLPassageMean, lim.MaxKL, e.PerplexityRatio, lim.MaxPerplexityRatio)
	e.Summary = fmt.Sprintf("%s patched into the bf16 model: top-1 %d vs %d (%s), %s",
		e.Format, e.ReferenceTop1, e.QuantizedTop1, agreeWord(e.Top1Agrees), figures)
	if e.Status != verdict.Pass {
		// The finding first; the figures that passed stay in sight.
		e.Summary = e.Findings[0] + " (" + figures + ")"
	}
	return e
}

func agreeWord(ok bool) string {
	if ok {
		return "each in the other's top-5"
	}
	return "disagree"
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// E2ERaised is quantized gate 2 when the op raised: a FAIL whose one
// finding is why (one line).
func E2ERaised(f Format, why string) *EndToEnd {
	e := &EndToEnd{Section: verdict.NewSection(), Format: f.Name(), Limits: f.E2ELimits()}
	e.FailWith("%s", why)
	e.Summary = why
	return e
}

// E2ENotRun is quantized gate 2 when it was not run, and why (quantized
// gate 1 failed on the bundle: its findings say what is wrong). SKIPPED,
// so the run's verdict is gate 1's, and the bf16 baseline beside it is the
// reference's alone.
func E2ENotRun(f Format, why string) *EndToEnd {
	e := &EndToEnd{Section: verdict.NewSection(), Format: f.Name(), Limits: f.E2ELimits()}
	e.Status = verdict.Skip
	e.Summary = "not run: " + why
	return e
}
