package quant

import (
	"math"

	"phase0/wire"
)

// Metrics are what gate 1 judges for one quantized tensor.
type Metrics struct {
	Cosine     float64 `json:"cosine"`
	RelL2      float64 `json:"rel_l2"`
	StdRatio   float64 `json:"std_ratio"` // std(loader) / std(reference)
	MaxAbsDiff float64 `json:"max_abs_diff"`
	// BeyondBound is the fraction of elements whose error exceeds the
	// format's own bound.
	BeyondBound float64 `json:"beyond_bound"`
	// WorstExcess is the largest error beyond the bound, in units of that
	// element's bound: how far beyond, where BeyondBound says how many.
	WorstExcess float64 `json:"worst_excess"`
}

// Of computes the metrics from the sums. An all-zero side has cosine 0
// and a relative L2 of +Inf against a zero reference (never NaN: the
// report is JSON).
func Of(s wire.QuantStats) Metrics {
	m := Metrics{MaxAbsDiff: s.MaxAbsDiff}
	if s.N == 0 {
		return m
	}
	if d := math.Sqrt(s.SumXX * s.SumYY); d > 0 {
		m.Cosine = s.SumXY / d
	}
	if s.SumYY > 0 {
		m.RelL2 = math.Sqrt(s.SumDD / s.SumYY)
	} else if s.SumDD > 0 {
		m.RelL2 = math.MaxFloat64
	}
	n := float64(s.N)
	vx := s.SumXX/n - (s.SumX/n)*(s.SumX/n)
	vy := s.SumYY/n - (s.SumY/n)*(s.SumY/n)
	if vy > 0 && vx >= 0 {
		m.StdRatio = math.Sqrt(vx / vy)
	}
	m.BeyondBound = float64(s.BeyondBound) / n
	m.WorstExcess = s.WorstExcess
	return m
}

// cosine of a confusion's sums.
func cosine(s wire.QuantStats) float64 { return Of(s).Cosine }
