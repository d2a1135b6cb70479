package quant

import (
	"bytes"
	"fmt"

	"phase0/wire"
)

// Format is what differs between quantization formats: its name, the
// error bound its own quantizer guarantees, the limits a clean tensor
// meets, and how a weights module reveals it.
type Format interface {
	// Name is the format as reports show it ("Q4NX").
	Name() string
	// Bound is the per-element error bound the worker counts against.
	Bound() wire.QuantBound
	// Limits are the per-tensor limits of a clean quantization.
	Limits() Limits
	// E2ELimits are quantized gate 2's limits (the dequantized weights
	// patched into the reference model).
	E2ELimits() E2ELimits
	// marks are substrings of a weights module that use the format.
	marks() []string
}

// Limits are the per-projection limits of one format, calibrated on real
// and real-shaped weights (Calibration says on what).
type Limits struct {
	MinCosine   float64 `json:"min_cosine"`
	MaxRelL2    float64 `json:"max_rel_l2"`
	MinStdRatio float64 `json:"min_std_ratio"`
	MaxStdRatio float64 `json:"max_std_ratio"`
	// MaxBeyond is the largest fraction of a tensor's elements allowed
	// beyond the format's own error bound.
	MaxBeyond float64 `json:"max_beyond_bound"`
	// MaxExcess bounds the worst element's error in units of its bound
	// (0: not judged): a few elements each far beyond what the format
	// allows (a block stored in the wrong place) fail though their share
	// is under MaxBeyond.
	MaxExcess   float64 `json:"max_excess,omitempty"`
	Calibration string  `json:"calibration"`
}

// formats in detection order: the most specific marks first (qwen25_3b_q4
// imports proj_qmm_pack's GROUP, a Q4NX mark, for its Q4_0).
var formats = []Format{q40{}, awq{}, q4nx{}}

// Detect returns the format a weights module's source uses.
func Detect(module []byte) (Format, error) {
	for _, f := range formats {
		for _, m := range f.marks() {
			if bytes.Contains(module, []byte(m)) {
				return f, nil
			}
		}
	}
	return nil, fmt.Errorf("the weights module names none of the formats phase0 judges (Q4NX, Q4_0, AWQ): no %s", allMarks())
}

func allMarks() string {
	var b bytes.Buffer
	for i, f := range formats {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", f.marks())
	}
	return b.String()
}

// Q4NX is the Q4NX format (for tests and callers that know it).
func Q4NX() Format { return q4nx{} }
