package quant

// q40 is the host Q4_0 of qwen25_3b_q4 (fused_decode/qwen25_3b_requant.py):
// symmetric 4-bit, one scale per 32 input elements, scale = absmax/8,
// q in −8..7. Error per element ≤ half a step (absmax/8 / 2) plus bf16
// rounding.
type q40 struct{}

var _ Format = q40{}

func (q40) Name() string { return "Q4_0" }

func (q40) Bound() Bound { return Bound{Group: 32, Levels: 8, Symmetric: true, Slack: 1.0 / 128} }

// Limits: upstream prints a relative L2 of 0.095–0.098 for Qwen2.5-3B's
// Q4_0 (no threshold); symmetric 4-bit loses one level to the sign, so it
// sits above Q4NX's 0.078.
func (q40) Limits() Limits {
	return Limits{MinCosine: 0.99, MaxRelL2: 0.16, MinStdRatio: 0.93, MaxStdRatio: 1.07, MaxBeyond: 0.001,
		Calibration: "upstream's printed rel L2 0.095-0.098 on Qwen2.5-3B (provisional until calibrated on packed real weights)"}
}

func (q40) marks() []string { return []string{"requant_q4_0", "dequant_q4_0"} }

func (q40) E2ELimits() E2ELimits { return e2e4bit }
