package safetensors

import "encoding/binary"

// The counters below test the IEEE exponent field of every element for all
// ones (NaN or ±Inf) without converting to floats. 16- and 32-bit lanes are
// tested four or two at a time inside 64-bit words: masking a lane to its
// exponent and adding the exponent's lowest bit carries into the lane's top
// bit exactly when the exponent is all ones, and never beyond the lane. Only
// words with a hit fall back to per-element code, so finite data costs a
// few integer ops per 8 bytes. Loads go through encoding/binary because
// tensor data need not be aligned.

const (
	bf16Exp, bf16Mant = 0x7F80, 0x007F
	f16Exp, f16Mant   = 0x7C00, 0x03FF
	f32Exp, f32Mant   = 0x7F800000, 0x007FFFFF
	f64Exp, f64Mant   = 0x7FF0000000000000, 0x000FFFFFFFFFFFFF
)

// countNonFinite dispatches on dtype; ok is false for dtypes without NaN/Inf.
func countNonFinite(dtype string, b []byte) (nan, inf int64, ok bool) {
	switch dtype {
	case "BF16":
		nan, inf = count16(b, bf16Exp, bf16Mant)
	case "F16":
		nan, inf = count16(b, f16Exp, f16Mant)
	case "F32":
		nan, inf = count32(b)
	case "F64":
		nan, inf = count64(b)
	default:
		return 0, 0, false
	}
	return nan, inf, true
}

func scannable(dtype string) bool {
	switch dtype {
	case "BF16", "F16", "F32", "F64":
		return true
	}
	return false
}

func count16(b []byte, exp, mant uint16) (nan, inf int64) {
	const lanes = 0x0001000100010001
	m := uint64(exp) * lanes
	one := uint64(exp&-exp) * lanes
	const top = 0x8000800080008000
	for len(b) >= 32 {
		s := b[:32:32]
		w0 := binary.LittleEndian.Uint64(s[0:])
		w1 := binary.LittleEndian.Uint64(s[8:])
		w2 := binary.LittleEndian.Uint64(s[16:])
		w3 := binary.LittleEndian.Uint64(s[24:])
		hits := ((w0 & m) + one) | ((w1 & m) + one) | ((w2 & m) + one) | ((w3 & m) + one)
		if hits&top != 0 {
			n, i := slow16(s, exp, mant)
			nan += n
			inf += i
		}
		b = b[32:]
	}
	n, i := slow16(b, exp, mant)
	return nan + n, inf + i
}

func slow16(b []byte, exp, mant uint16) (nan, inf int64) {
	for len(b) >= 2 {
		v := binary.LittleEndian.Uint16(b)
		if v&exp == exp {
			if v&mant != 0 {
				nan++
			} else {
				inf++
			}
		}
		b = b[2:]
	}
	return nan, inf
}

func count32(b []byte) (nan, inf int64) {
	const lanes = 0x0000000100000001
	const m, one = f32Exp * lanes, 0x00800000 * lanes
	const top = 0x8000000080000000
	for len(b) >= 32 {
		s := b[:32:32]
		w0 := binary.LittleEndian.Uint64(s[0:])
		w1 := binary.LittleEndian.Uint64(s[8:])
		w2 := binary.LittleEndian.Uint64(s[16:])
		w3 := binary.LittleEndian.Uint64(s[24:])
		hits := ((w0 & m) + one) | ((w1 & m) + one) | ((w2 & m) + one) | ((w3 & m) + one)
		if hits&top != 0 {
			n, i := slow32(s)
			nan += n
			inf += i
		}
		b = b[32:]
	}
	n, i := slow32(b)
	return nan + n, inf + i
}

func slow32(b []byte) (nan, inf int64) {
	for len(b) >= 4 {
		v := binary.LittleEndian.Uint32(b)
		if v&f32Exp == f32Exp {
			if v&f32Mant != 0 {
				nan++
			} else {
				inf++
			}
		}
		b = b[4:]
	}
	return nan, inf
}

func count64(b []byte) (nan, inf int64) {
	for len(b) >= 8 {
		v := binary.LittleEndian.Uint64(b)
		if v&f64Exp == f64Exp {
			if v&f64Mant != 0 {
				nan++
			} else {
				inf++
			}
		}
		b = b[8:]
	}
	return nan, inf
}
