// Package stformat holds the fixed facts of the safetensors format that both
// the reader (package safetensors) and the test writer (package sttest) need:
// dtype sizes, reserved names and element counts. It imports only the
// standard library, so test helpers can use it without importing the reader
// they test.
package stformat

import (
	"math"
	"math/bits"
)

// File names of a HuggingFace checkpoint folder.
const (
	SingleFile = "model.safetensors"            // an unsharded checkpoint
	IndexFile  = "model.safetensors.index.json" // the sharded checkpoint's index
)

// MetadataKey is the reserved header key holding free-form string metadata.
const MetadataKey = "__metadata__"

// DTypeSize returns the element size in bytes of a safetensors dtype name
// and whether the name is known. Only dtypes with a whole-byte element size
// are known.
func DTypeSize(dtype string) (int64, bool) {
	// A switch, not a map: the header parser calls this once per tensor.
	switch dtype {
	case "BOOL", "U8", "I8", "F8_E4M3", "F8_E5M2", "F8_E8M0":
		return 1, true
	case "I16", "U16", "F16", "BF16":
		return 2, true
	case "I32", "U32", "F32":
		return 4, true
	case "I64", "U64", "F64":
		return 8, true
	}
	return 0, false
}

// DTypeName returns the constant spelling of a known dtype name (the name
// itself when unknown), so a parsed name need not keep its buffer alive.
func DTypeName(dtype string) string {
	for _, n := range dtypeNames {
		if n == dtype {
			return n
		}
	}
	return dtype
}

// dtypeNames are the names DTypeSize knows.
var dtypeNames = [...]string{"BF16", "F16", "F32", "F64", "BOOL", "U8", "I8", "F8_E4M3", "F8_E5M2", "F8_E8M0",
	"I16", "U16", "I32", "U32", "I64", "U64"}

// ElementCount multiplies a shape's dims, reporting false on overflow.
func ElementCount(shape []int64) (uint64, bool) {
	n := uint64(1)
	for _, d := range shape {
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 {
			return 0, false
		}
		n = lo
	}
	return n, true
}

// RoundBF16 rounds f to bf16 bits as ml_dtypes and torch do: nearest, ties
// to even; a NaN stays a (quiet) NaN.
func RoundBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if f != f {
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// BF16Float32 is the float32 a bf16 bit pattern denotes (exact).
func BF16Float32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }
