package quant

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"phase0/gate/verdict"
	"phase0/read/tensornames"
	"phase0/wire"
)

// E2ELimits are quantized gate 2's limits for one format: the paired rule
// against the twin (the judged one) and a coarse absolute backstop.
type E2ELimits struct {
	// MaxKL bounds the mean over the passage of KL(bf16 ‖ quantized), in
	// nats: the backstop, for a twin that is itself broken (a reference
	// 4 bits cannot represent), where a comparison with the twin says nothing.
	MaxKL float64 `json:"max_kl"`
	// MaxPerplexityRatio bounds the passage perplexity, quantized over
	// bf16: the backstop's other half.
	MaxPerplexityRatio float64 `json:"max_perplexity_ratio"`
	// Paired is the rule against the twin.
	Paired      PairedLimits `json:"paired"`
	Calibration string       `json:"calibration"`
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
	// Top1 is each side's top-1 at the prompt's last position, with
	// verify's rule (each within the other's top-5), for the bundle and
	// the twin. One position is no statistic: the rule is reported, and
	// the judged top-1 rule is the passage's (Top1 below).
	ReferenceTop1  int     `json:"reference_top1"`
	QuantizedTop1  int     `json:"quantized_top1"`
	Top1Agrees     bool    `json:"top1_agrees"`
	TwinTop1       int     `json:"twin_top1"`
	TwinTop1Agrees bool    `json:"twin_top1_agrees"`
	KLPrompt       float64 `json:"kl_prompt"`
	KLPromptTwin   float64 `json:"kl_prompt_twin"`
	KLPassageMean  float64 `json:"kl_passage_mean"`
	KLPassageMax   float64 `json:"kl_passage_max"`
	// PerplexityRatio is exp(mean NLL quantized − mean NLL bf16) on the passage.
	PerplexityRatio float64 `json:"perplexity_ratio"`
	// PassageTop1Agreement is the share of passage positions whose argmax
	// agree with the reference's.
	PassageTop1Agreement float64 `json:"passage_top1_agreement"`
	// Twin is the paired comparison with the twin: both sides' tails and
	// the three paired rules; nil when no twin could be built.
	Twin *TwinComparison `json:"twin,omitempty"`
}

// JudgeE2E judges quantized gate 2 for a folder of format f, against the
// number of projections the reference has (nLayers × 7): the bundle against
// its twin, paired per passage token, and against the coarse backstop.
func JudgeE2E(f Format, facts *wire.QuantE2EFacts, nLayers int) *EndToEnd {
	lim := f.E2ELimits()
	e := &EndToEnd{Section: verdict.NewSection(), Format: f.Name(), Loader: facts.Loader, Patched: facts.Patched, HeadPatched: facts.HeadPatched, FromGate1: facts.FromGate1, Limits: lim,
		KLPrompt: facts.KLPrompt, KLPromptTwin: facts.KLPromptTwin}
	if why := twinUnavailable(f, facts, nLayers); why != "" {
		// No twin, no noise floor: could not evaluate, never a silent fall-back to the backstop alone.
		e.Status = verdict.Error
		e.Find("could not evaluate quantized gate 2: %s", why)
		e.Summary = e.Findings[0]
		return e
	}
	if want := nLayers * len(tensornames.Projections()); facts.Patched != want {
		e.FailWith("%s patched %d projections into the reference model, expected %d (%d layers × %d)", facts.Loader, facts.Patched, want, nLayers, len(tensornames.Projections()))
	}
	if len(facts.ReferenceTop) == 0 || len(facts.QuantizedTop) == 0 || len(facts.TwinTop) == 0 {
		e.FailWith("the worker reported no top-5 for the prompt (reference %d ids, quantized %d, twin %d)", len(facts.ReferenceTop), len(facts.QuantizedTop), len(facts.TwinTop))
		e.Summary = e.Findings[0]
		return e
	}
	e.ReferenceTop1, e.QuantizedTop1, e.TwinTop1 = facts.ReferenceTop[0], facts.QuantizedTop[0], facts.TwinTop[0]
	e.Top1Agrees = slices.Contains(facts.QuantizedTop, e.ReferenceTop1) && slices.Contains(facts.ReferenceTop, e.QuantizedTop1)
	e.TwinTop1Agrees = slices.Contains(facts.TwinTop, e.ReferenceTop1) && slices.Contains(facts.ReferenceTop, e.TwinTop1)
	n := len(facts.KLPassage)
	if n < 2 || len(facts.ReferenceNLL) != n || len(facts.QuantizedNLL) != n || len(facts.KLPassageTwin) != n || len(facts.TwinNLL) != n ||
		len(facts.ReferenceArgmax) != n || len(facts.QuantizedArgmax) != n || len(facts.TwinArgmax) != n || len(facts.DPPassage) != n || len(facts.DPPassageTwin) != n {
		e.FailWith("passage facts disagree in length: KL %d (twin %d), NLL bf16 %d, dequantized %d, twin %d, argmax %d/%d/%d, Δp %d/%d positions",
			n, len(facts.KLPassageTwin), len(facts.ReferenceNLL), len(facts.QuantizedNLL), len(facts.TwinNLL),
			len(facts.ReferenceArgmax), len(facts.QuantizedArgmax), len(facts.TwinArgmax), len(facts.DPPassage), len(facts.DPPassageTwin))
		e.Summary = e.Findings[len(e.Findings)-1]
		return e
	}
	c := compareTwin(facts, lim.Paired)
	e.Twin = c
	e.KLPassageMean, e.KLPassageMax = c.Bundle.KL.Mean, c.Bundle.KL.Max
	e.PerplexityRatio, e.PassageTop1Agreement = c.Bundle.PerplexityRatio, c.Bundle.Top1Agreement
	for _, r := range []PairedRule{c.KL, c.Top1, c.NLL} {
		if r.Failed {
			e.FailWith("%s", r.Finding)
		}
	}
	// The backstop: coarse absolute bounds, for a twin that is itself broken.
	twinToo := func(x, lim float64) string {
		if x > lim {
			return fmt.Sprintf("; the twin too (%.4g): 4 bits do not represent this reference", x)
		}
		return ""
	}
	if !finite(e.KLPassageMean) || e.KLPassageMean > lim.MaxKL {
		e.FailWith("backstop: mean KL divergence over the calibration passage (%d positions) %.4g nats > %g (max %.4g)%s", n, e.KLPassageMean, lim.MaxKL, e.KLPassageMax, twinToo(c.Twin.KL.Mean, lim.MaxKL))
	}
	if !finite(e.PerplexityRatio) || e.PerplexityRatio > lim.MaxPerplexityRatio {
		e.FailWith("backstop: passage perplexity ratio (dequantized / bf16) %.4g > %g%s", e.PerplexityRatio, lim.MaxPerplexityRatio, twinToo(c.Twin.PerplexityRatio, lim.MaxPerplexityRatio))
	}
	if p := c.PartsAt; p != nil {
		e.FailWith("hidden states first part from the reference at layer %d: cosine %.4g vs the twin's %.4g (a cosine distance beyond %g× the twin's + %g)",
			p.Layer, p.Bundle, p.Twin, lim.Paired.PartFactor, lim.Paired.PartFloor)
	}
	figures := fmt.Sprintf("KL passage mean %.4g vs the twin's %.4g nats (p99 %.4g vs %.4g), top-1 agreement %.1f %% vs %.1f %%, perplexity ratio %.4g vs %.4g",
		c.Bundle.KL.Mean, c.Twin.KL.Mean, c.Bundle.KL.P99, c.Twin.KL.P99, 100*c.Bundle.Top1Agreement, 100*c.Twin.Top1Agreement, c.Bundle.PerplexityRatio, c.Twin.PerplexityRatio)
	e.Summary = fmt.Sprintf("%s patched into the bf16 model, judged against its %s twin: %s", e.Format, facts.TwinRule, figures)
	if e.Status != verdict.Pass {
		// The finding first, then where the hidden states part; the figures stay in sight.
		where := ""
		if p := c.PartsAt; p != nil && !strings.HasPrefix(e.Findings[0], "hidden states first part") {
			where = fmt.Sprintf("; hidden states first part from the reference at layer %d: cosine %.4g vs the twin's %.4g", p.Layer, p.Bundle, p.Twin)
		}
		e.Summary = e.Findings[0] + where + " (" + figures + ")"
	}
	return e
}

// AgainstGate1 adds to a gate 2 whose hidden states part at a layer that
// gate 1 passed tensor by tensor what that points at: something gate 1
// cannot see. A nil gate 1, or one with a failing row in the layer, adds
// nothing (gate 1's own finding names it).
func (e *EndToEnd) AgainstGate1(w *Weights) {
	if e == nil || w == nil || e.Twin == nil || e.Twin.PartsAt == nil {
		return
	}
	layer, rows := e.Twin.PartsAt.Layer, 0
	for _, r := range w.Rows {
		if r.Layer != layer {
			continue
		}
		if r.Status != verdict.Pass {
			return
		}
		rows++
	}
	if rows == 0 {
		return
	}
	note := fmt.Sprintf("gate 1 passed all %d tensors of layer %d: what parts there is what gate 1 cannot see (a constant, the RoPE table, a norm convention, the order of operations)", rows, layer)
	e.Find("%s", note)
	if e.Status != verdict.Pass {
		e.Summary += "; " + note
	}
}

// twinUnavailable says why the facts carry no twin to judge against ("" when they do).
func twinUnavailable(f Format, facts *wire.QuantE2EFacts, nLayers int) string {
	if b := f.Bound(); b.Group <= 0 || b.Levels <= 0 {
		return fmt.Sprintf("format %s has no quantization rule phase0 knows (group %d, levels %d) to build the twin with", f.Name(), b.Group, b.Levels)
	}
	if facts.TwinError != "" {
		return facts.TwinError
	}
	if want := nLayers * len(tensornames.Projections()); facts.TwinQuantized != want {
		return fmt.Sprintf("the worker built the twin from %d projections, expected %d (%d layers × %d)", facts.TwinQuantized, want, nLayers, len(tensornames.Projections()))
	}
	return ""
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
