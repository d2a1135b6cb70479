package quant

import (
	"fmt"
	"math"
	"slices"

	"phase0/wire"
)

// PairedLimits are quantized gate 2's rule against the twin. Each passage
// token gives a paired difference (bundle minus twin, the same token, the
// same context); the bundle FAILs a rule when the mean difference exceeds
// K standard errors of the paired differences plus a floor. K·SE is what
// the token-to-token spread allows (a clean bundle quantized by another
// rule than the twin's differs from it token by token, in both
// directions); the floor keeps two near-zero figures (a bundle packed with
// the twin's own rule: differences of 1e-4 nats with an SE of 1e-5) from
// failing on a difference no one would call a defect.
type PairedLimits struct {
	// K is the number of standard errors of the mean paired difference the
	// bundle may lie above the twin (3: a one-sided 0.13 % false-FAIL rate
	// where the mean is normal, which a passage of ~100 tokens allows).
	K float64 `json:"k"`
	// RelFloor is the floor relative to the twin's own mean KL: a bundle
	// whose quantizer costs up to this much more than plain round-to-nearest
	// still passes.
	RelFloor float64 `json:"rel_floor"`
	// AbsFloor is the floor in nats, for twins whose KL is near zero.
	AbsFloor float64 `json:"abs_floor"`
	// Top1Floor is the share of passage tokens the bundle's top-1 may
	// disagree on beyond the twin's, on top of K·√(discordant pairs).
	Top1Floor float64 `json:"top1_floor"`
	// PartFactor and PartFloor locate where the hidden states part: the
	// first layer whose cosine distance (1 − cosine) to the reference is
	// more than PartFactor times the twin's plus PartFloor.
	PartFactor float64 `json:"part_factor"`
	PartFloor  float64 `json:"part_floor"`
}

// Tails are a per-token figure's distribution over the passage.
type Tails struct {
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
	Max    float64 `json:"max"`
}

// SideFigures are one side's (the bundle's or the twin's) figures against
// the source checkpoint over the passage, and its hidden-state cosines.
type SideFigures struct {
	// KL is KL(bf16 ‖ side) per token.
	KL Tails `json:"kl"`
	// Top1Agreement is the share of passage tokens whose argmax is the reference's.
	Top1Agreement float64 `json:"top1_agreement"`
	// DeltaP is the drop of the reference's top-1 probability per token.
	DeltaPRMS float64 `json:"delta_p_rms"`
	DeltaPMax float64 `json:"delta_p_max"`
	// PerplexityRatio is exp(mean NLL side − mean NLL bf16).
	PerplexityRatio float64 `json:"perplexity_ratio"`
	// HiddenCosine is per decoder layer, on the prompt.
	HiddenCosine []float64 `json:"hidden_cosine"`
}

// PairedRule is one rule against the twin: the mean paired difference
// (bundle − twin), its standard error, the margin allowed and the outcome.
type PairedRule struct {
	Name       string  `json:"name"`
	Difference float64 `json:"difference"`
	SE         float64 `json:"se"`
	Margin     float64 `json:"margin"`
	Failed     bool    `json:"failed"`
	Finding    string  `json:"finding,omitempty"`
}

// Parting is the first layer where the bundle's hidden states part from
// the reference beyond the twin's.
type Parting struct {
	Layer  int     `json:"layer"`
	Bundle float64 `json:"bundle_cosine"`
	Twin   float64 `json:"twin_cosine"`
}

// TwinComparison is the bundle beside its twin.
type TwinComparison struct {
	Rule   string      `json:"rule"`
	Tokens int         `json:"tokens"`
	Bundle SideFigures `json:"bundle"`
	Twin   SideFigures `json:"twin"`
	KL     PairedRule  `json:"kl"`
	Top1   PairedRule  `json:"top1"`
	NLL    PairedRule  `json:"nll"`
	// PartsAt is nil when no layer parts beyond the twin's.
	PartsAt *Parting `json:"parts_at,omitempty"`
}

// compareTwin computes both sides' figures and the paired rules; the
// facts' passage lists have one length (JudgeE2E checked).
func compareTwin(f *wire.QuantE2EFacts, lim PairedLimits) *TwinComparison {
	n := len(f.KLPassage)
	c := &TwinComparison{Rule: f.TwinRule, Tokens: n,
		Bundle: side(f.KLPassage, f.DPPassage, f.QuantizedNLL, f.ReferenceNLL, f.QuantizedArgmax, f.ReferenceArgmax, f.HiddenCosine),
		Twin:   side(f.KLPassageTwin, f.DPPassageTwin, f.TwinNLL, f.ReferenceNLL, f.TwinArgmax, f.ReferenceArgmax, f.HiddenCosineTwin)}
	floor := math.Max(lim.AbsFloor, lim.RelFloor*math.Max(c.Twin.KL.Mean, 0))

	c.KL = paired("KL", f.KLPassage, f.KLPassageTwin, lim.K, floor)
	if c.KL.Failed {
		c.KL.Finding = fmt.Sprintf("KL(bf16 ‖ dequantized) over the passage's %d tokens is worse than the twin's beyond the paired spread: mean %.4g vs %.4g nats, difference %.4g > %g·SE %.3g + floor %.3g = %.4g",
			n, c.Bundle.KL.Mean, c.Twin.KL.Mean, c.KL.Difference, lim.K, c.KL.SE, floor, c.KL.Margin)
	}
	c.NLL = paired("NLL", f.QuantizedNLL, f.TwinNLL, lim.K, floor)
	if c.NLL.Failed {
		c.NLL.Finding = fmt.Sprintf("passage perplexity is worse than the twin's beyond the paired spread: ratio to bf16 %.4g vs the twin's %.4g (ln difference %.4g > %g·SE %.3g + floor %.3g = %.4g)",
			c.Bundle.PerplexityRatio, c.Twin.PerplexityRatio, c.NLL.Difference, lim.K, c.NLL.SE, floor, c.NLL.Margin)
	}
	// Top-1, paired: tokens the twin gets right and the bundle not (lost)
	// against the reverse (won); a sign test's normal bound on lost − won.
	lost, won := 0, 0
	for i := range n {
		t, b := f.TwinArgmax[i] == f.ReferenceArgmax[i], f.QuantizedArgmax[i] == f.ReferenceArgmax[i]
		if t && !b {
			lost++
		} else if b && !t {
			won++
		}
	}
	c.Top1 = PairedRule{Name: "top-1", Difference: float64(lost-won) / float64(n), SE: math.Sqrt(float64(lost+won)) / float64(n)}
	c.Top1.Margin = lim.K*c.Top1.SE + lim.Top1Floor
	if c.Top1.Difference > c.Top1.Margin {
		c.Top1.Failed = true
		c.Top1.Finding = fmt.Sprintf("top-1 over the passage agrees with bf16 on %.1f %% of %d tokens against the twin's %.1f %%: %d tokens lost and %d won against the twin, a shortfall of %.3g > %g·SE %.3g + floor %g",
			100*c.Bundle.Top1Agreement, n, 100*c.Twin.Top1Agreement, lost, won, c.Top1.Difference, lim.K, c.Top1.SE, lim.Top1Floor)
	}
	c.PartsAt = parting(f.HiddenCosine, f.HiddenCosineTwin, lim)
	return c
}

// paired is the rule "mean(bundle − twin) ≤ k·SE + floor".
func paired(name string, bundle, twin []float64, k, floor float64) PairedRule {
	n := float64(len(bundle))
	var sum, sumsq float64
	for i := range bundle {
		d := bundle[i] - twin[i]
		sum += d
		sumsq += d * d
	}
	mean := sum / n
	variance := math.Max(sumsq/n-mean*mean, 0) * n / (n - 1)
	r := PairedRule{Name: name, Difference: mean, SE: math.Sqrt(variance / n)}
	r.Margin = k*r.SE + floor
	r.Failed = !finite(mean) || mean > r.Margin
	return r
}

func side(kl, dp, nll, refNLL []float64, argmax, refArgmax []int, cosine []float64) SideFigures {
	s := SideFigures{KL: tails(kl), HiddenCosine: cosine}
	n := float64(len(kl))
	var sq, dNLL float64
	same := 0
	for i := range kl {
		sq += dp[i] * dp[i]
		s.DeltaPMax = math.Max(s.DeltaPMax, dp[i])
		dNLL += nll[i] - refNLL[i]
		if argmax[i] == refArgmax[i] {
			same++
		}
	}
	s.DeltaPRMS = math.Sqrt(sq / n)
	s.PerplexityRatio = math.Exp(dNLL / n)
	s.Top1Agreement = float64(same) / n
	return s
}

// tails of xs (not empty), percentiles by linear interpolation between ranks.
func tails(xs []float64) Tails {
	s := slices.Clone(xs)
	slices.Sort(s)
	q := func(p float64) float64 {
		pos := p * float64(len(s)-1)
		lo := int(math.Floor(pos))
		if lo+1 >= len(s) {
			return s[len(s)-1]
		}
		return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
	}
	var sum float64
	for _, x := range s {
		sum += x
	}
	return Tails{Mean: sum / float64(len(s)), Median: q(0.5), P90: q(0.9), P99: q(0.99), Max: s[len(s)-1]}
}

// parting is the first layer whose bundle cosine distance exceeds the
// twin's by the margin (nil when none does, or the lists disagree).
func parting(bundle, twin []float64, lim PairedLimits) *Parting {
	if len(bundle) != len(twin) {
		return nil
	}
	for k := range bundle {
		if 1-bundle[k] > lim.PartFactor*(1-twin[k])+lim.PartFloor || !finite(bundle[k]) {
			return &Parting{Layer: k, Bundle: bundle[k], Twin: twin[k]}
		}
	}
	return nil
}
