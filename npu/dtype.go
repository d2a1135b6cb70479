package npu

import (
	"fmt"
	"unsafe"
)

// DType is the element type of a host buffer. The NPU sees bytes; the type
// exists so sizes are checked and errors can say what a buffer holds.
type DType string

const (
	BF16 DType = "bf16"
	F16  DType = "f16"
	F32  DType = "f32"
	I8   DType = "i8"
	U8   DType = "u8"
	I16  DType = "i16"
	I32  DType = "i32"
	U32  DType = "u32"
	I64  DType = "i64"
)

var dtypeSize = map[DType]int{BF16: 2, F16: 2, F32: 4, I8: 1, U8: 1, I16: 2, I32: 4, U32: 4, I64: 8}

// Size is the element size in bytes (0 for an unknown type).
func (t DType) Size() int { return dtypeSize[t] }

// Role says how the Runner moves an argument between host and device.
type Role int

const (
	// Input is written to the device before every run.
	Input Role = iota
	// Static is written on the first run of a buffer key only (weights,
	// lookup tables): later runs with the same key reuse what is resident.
	Static
	// Scratch is written on the first run of a key only and never read
	// back: the kernel overwrites it (upstream's intermediate buffers).
	Scratch
	// Output is not written, and is read back after every run.
	Output
	// InOut is written before and read back after every run.
	InOut
)

func (r Role) String() string {
	switch r {
	case Input:
		return "input"
	case Static:
		return "static"
	case Scratch:
		return "scratch"
	case Output:
		return "output"
	case InOut:
		return "inout"
	}
	return fmt.Sprintf("role(%d)", int(r))
}

func (r Role) writesEveryRun() bool { return r == Input || r == InOut }
func (r Role) writesFirstRun() bool { return r == Static || r == Scratch || r.writesEveryRun() }
func (r Role) readsBack() bool      { return r == Output || r == InOut }

// Arg is one kernel argument: a typed host buffer and its role. Data aliases
// the caller's slice, so outputs land in the caller's typed slice.
type Arg struct {
	Name  string // optional, for messages
	DType DType
	Role  Role
	Data  []byte
}

// bytesArg makes an argument from raw bytes holding elements of type t.
func bytesArg(role Role, t DType, data []byte) Arg { return Arg{DType: t, Role: role, Data: data} }

// f32Arg views a float32 slice as an argument without copying.
func f32Arg(role Role, xs []float32) Arg {
	var b []byte
	if len(xs) > 0 {
		b = unsafe.Slice((*byte)(unsafe.Pointer(&xs[0])), len(xs)*int(unsafe.Sizeof(xs[0])))
	}
	return Arg{DType: F32, Role: role, Data: b}
}

func (a Arg) label(i int) string {
	if a.Name != "" {
		return fmt.Sprintf("arg %d (%s, %s %s)", i, a.Name, a.Role, a.DType)
	}
	return fmt.Sprintf("arg %d (%s %s)", i, a.Role, a.DType)
}

func (a Arg) validate(i int) error {
	size := a.DType.Size()
	switch {
	case size == 0:
		return fmt.Errorf("%s: unknown dtype %q", a.label(i), a.DType)
	case a.Role < Input || a.Role > InOut:
		return fmt.Errorf("%s: unknown role", a.label(i))
	case len(a.Data) == 0:
		return fmt.Errorf("%s: empty buffer", a.label(i))
	case len(a.Data)%size != 0:
		return fmt.Errorf("%s: %d bytes is not a whole number of %d-byte elements", a.label(i), len(a.Data), size)
	}
	return nil
}
