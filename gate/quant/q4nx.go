package quant

import "phase0/wire"

// q4nx is FastFlowLM's Q4NX (fused_decode/proj_qmm_pack.py): 4-bit affine
// blocks of 32 rows × 256 columns, a bf16 scale and min per row per
// 32-column group, q in 0..15 from the group's min and max; I8 and Q4NX
// header codecs decode to the same values. Error per element ≤ half a step
// ((max−min)/15 / 2) plus the bf16 rounding of scale, min and result.
type q4nx struct{}

var _ Format = q4nx{}

func (q4nx) Name() string { return "Q4NX" }

func (q4nx) Bound() wire.QuantBound {
	return wire.QuantBound{Group: 32, Levels: 15, Symmetric: false, Slack: 1.0 / 128, BlockRows: q4nxRowBlock, BlockCols: q4nxColBlock}
}

// Limits: a clean min/max pack of real-shaped Llama-3.2-1B weights gives
// cosine 0.997 and relative L2 0.078 on every projection (docs/quantized.md,
// "What is judged"; and the tiny packs of the tests: 0.9969–0.9970, 0.078–0.079, none beyond the
// bound; the worker's own statistics of SmolLM2 quantized off its own
// grid: cosine ≥ 0.9966, relative L2 ≤ 0.083, std ratio ≤ 1.0054, none
// beyond). The limits leave room for a quantizer that searches its scales
// (FastFlowLM's own) while a random, transposed, swapped, doubled-scale or
// other model's tensor lands far outside them (cosine ≈ 0, std ratio ≈ 2).
func (q4nx) Limits() Limits {
	// MaxExcess: a clean pack has no element beyond the bound; a searched
	// scale may put a few just past it, never 4 bounds away (one swapped
	// 32×256 block pair of a real-shaped down_proj: ≈ 19).
	return Limits{MinCosine: 0.99, MaxRelL2: 0.14, MinStdRatio: 0.95, MaxStdRatio: 1.05, MaxBeyond: 0.001, MaxExcess: 4,
		Calibration: "min/max 4-bit affine g32 on real-shaped Llama-3.2-1B and tiny Llama weights: cosine 0.997, rel L2 0.078, 0 beyond the bound"}
}

func (q4nx) marks() []string { return []string{"proj_qmm_pack", "model.q4nx", "Q4nxModel"} }

func (q4nx) E2ELimits() E2ELimits { return e2e4bit }

// Q4NX block geometry: 32 rows × 256 columns, 5,120 bytes a block (bf16
// scales and mins for 8 column groups of 32 rows, then the nibbles).
const (
	q4nxRowBlock   = 32
	q4nxColBlock   = 256
	q4nxBlockBytes = 5120
)

// Q4NXBytes is the byte size of a tensor under the older Q4NX header codec
// (dtype Q4NX, logical shape [M, K]), which the folder's loader still
// reads beside I8: false when the shape is not whole blocks.
func Q4NXBytes(shape []int64) (int64, bool) {
	if len(shape) != 2 || shape[0] <= 0 || shape[1] <= 0 || shape[0]%q4nxRowBlock != 0 || shape[1]%q4nxColBlock != 0 {
		return 0, false
	}
	blocks := (shape[0] / q4nxRowBlock) * (shape[1] / q4nxColBlock)
	if blocks > (1<<62)/q4nxBlockBytes {
		return 0, false
	}
	return blocks * q4nxBlockBytes, true
}
