package quant

// e2e4bit are quantized gate 2's limits of the 4-bit formats (docs/quantized.md
// has the figures).
//
// The judged rule is paired against the twin (PairedLimits): K = 3 standard
// errors of the per-token differences, plus a floor of half the twin's own
// mean KL (at least 0.005 nats). Half: a clean bundle whose quantizer is not
// the twin's (a scale search, AWQ's channel scaling, a different rounding of
// the zero point) lands within ±30 % of the twin's KL on the fixtures and on
// SmolLM2; every one-layer corruption measured costs ≥ 2× the twin's.
//
// The backstop is the old fixed limits, kept coarse (1.5 nats of mean KL
// over the passage, a perplexity ratio of 1.5), calibrated on
// SmolLM2-135M-Instruct quantized 16 columns off its own Q4_1 grid: clean
// I8/Q4NX/Q4_0 give a passage mean of 0.56-0.79 nats and a ratio of
// 0.85-1.16; one random-init or transposed projection a mean of 3.5-5.6 and
// a ratio of 13-274. It fails a bundle the twin cannot speak for (a
// reference 4 bits cannot represent: then the twin is beyond it too, and
// the finding says so).
var e2e4bit = E2ELimits{MaxKL: 1.5, MaxPerplexityRatio: 1.5,
	Paired:      PairedLimits{K: 3, RelFloor: 0.5, AbsFloor: 0.005, Top1Floor: 0.02, PartFactor: 2, PartFloor: 0.01},
	Calibration: "paired per token against a round-to-nearest twin of the reference (3·SE + max(0.5 × the twin’s KL, 0.005 nats)); backstop from SmolLM2-135M off-grid 4-bit g32: clean KL ≤ 0.79 nats, ratio ≤ 1.16; one bad projection: KL ≥ 3.5, ratio ≥ 13"}
