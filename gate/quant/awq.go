package quant

import "phase0/wire"

// awq is AutoAWQ's asymmetric 4-bit (qweight/qzeros/scales, group 128
// along the input). AWQ rescales input channels by activation-aware
// factors before quantizing and folds their inverse into the previous
// op, so a dequantized projection is W·diag(s), not W: the limits are
// wider than the bound alone says, and upstream's llama32_1b_int4 uses
// its own dequant as its reference for that reason.
type awq struct{}

var _ Format = awq{}

func (awq) Name() string { return "AWQ (int4 g128)" }

func (awq) Bound() wire.QuantBound {
	return wire.QuantBound{Group: 128, Levels: 15, Symmetric: false, Slack: 1.0 / 128}
}

// Limits: our AutoAWQ-layout packer (g128 min/max, no channel scaling) on
// real-shaped Llama-3.2-1B weights gives cosine 0.9950, relative L2 0.100,
// std ratio 1.005 and none beyond the bound on every projection; on
// SmolLM2-135M (groups of 64 where its 576 columns are not a multiple of
// 128) cosine 0.9939–0.9958, relative L2 0.092–0.111, std ratio
// 1.003–1.006, 0 beyond: the worker's own statistics
// (python -m phase0_benchmodels.quant_worker_stats). The limits are wider than those figures
// because AWQ's activation-aware channel scaling (which our packer does
// not apply) moves a real checkpoint's dequant further from the raw bf16;
// it also leaves the worst element unbounded against the raw bf16, so
// MaxExcess is not judged.
func (awq) Limits() Limits {
	return Limits{MinCosine: 0.97, MaxRelL2: 0.25, MinStdRatio: 0.85, MaxStdRatio: 1.15, MaxBeyond: 0.05,
		Calibration: "affine 4-bit g128 on real-shaped Llama-3.2-1B and SmolLM2 weights: cosine >= 0.993, rel L2 <= 0.111, 0 beyond the bound; widened for AWQ's channel scaling"}
}

func (awq) marks() []string { return []string{"qweight", "qzeros", "load_weights_awq"} }

// E2ELimits: AWQ's g128 groups and channel scaling are not calibrated on
// SmolLM2 (576 columns are not a multiple of 128): the 4-bit limits stand.
func (awq) E2ELimits() E2ELimits { return e2e4bit }
