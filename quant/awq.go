package quant

// awq is AutoAWQ's asymmetric 4-bit (qweight/qzeros/scales, group 128
// along the input). AWQ rescales input channels by activation-aware
// factors before quantizing and folds their inverse into the previous
// op, so a dequantized projection is W·diag(s), not W: the limits are
// wider than the bound alone says, and upstream's llama32_1b_int4 uses
// its own dequant as its reference for that reason.
type awq struct{}

var _ Format = awq{}

func (awq) Name() string { return "AWQ (int4 g128)" }

func (awq) Bound() Bound { return Bound{Group: 128, Levels: 15, Symmetric: false, Slack: 1.0 / 128} }

func (awq) Limits() Limits {
	return Limits{MinCosine: 0.97, MaxRelL2: 0.25, MinStdRatio: 0.85, MaxStdRatio: 1.15, MaxBeyond: 0.05,
		Calibration: "provisional: g128 affine bound, widened for AWQ's channel scaling; not yet calibrated on packed real weights"}
}

func (awq) marks() []string { return []string{"qweight", "qzeros", "load_weights_awq"} }

// E2ELimits: AWQ's g128 groups and channel scaling are not calibrated on
// SmolLM2 (576 columns are not a multiple of 128): the 4-bit limits stand.
func (awq) E2ELimits() E2ELimits { return e2e4bit }
