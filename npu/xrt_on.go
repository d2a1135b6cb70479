//go:build xrt

package npu

/*
#cgo CXXFLAGS: -std=c++17
#cgo pkg-config: xrt
#include <stdlib.h>
#include "xrtshim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

const xrtBuilt = true

// errLen is the size of the error buffer handed to every shim call.
const errLen = 1024

func shimErr(buf []C.char) error {
	return errors.New(C.GoString(&buf[0]))
}

// XRTVersion reports the XRT library version this binary is linked against.
func XRTVersion() (string, error) {
	var buf [64]C.char
	C.npu_xrt_version(&buf[0], C.size_t(len(buf)))
	return C.GoString(&buf[0]), nil
}

// xrtDevices lists what XRT enumerates (name and BDF per device).
func xrtDevices() ([]Device, error) {
	ebuf := make([]C.char, errLen)
	n := C.npu_xrt_device_count(&ebuf[0], errLen)
	if n < 0 {
		return nil, fmt.Errorf("npu: xrt enumerate devices: %w", shimErr(ebuf))
	}
	var out []Device
	for i := range int(n) {
		var info C.npu_xrt_device
		if C.npu_xrt_device_info(C.uint(i), &info, &ebuf[0], errLen) != 0 {
			return out, fmt.Errorf("npu: xrt device %d: %w", i, shimErr(ebuf))
		}
		out = append(out, Device{Name: C.GoString(&info.name[0]), BDF: C.GoString(&info.bdf[0]), Source: "xrt"})
	}
	return out, nil
}

// mergeXRT lays XRT's name over the sysfs view of the same PCI address and
// adds devices only XRT sees. XRT failing to enumerate leaves sysfs's view.
func mergeXRT(devs []Device) []Device {
	xs, err := xrtDevices()
	if err != nil {
		return devs
	}
	for _, x := range xs {
		merged := false
		for i := range devs {
			if devs[i].BDF == x.BDF || "0000:"+x.BDF == devs[i].BDF {
				devs[i].Name, devs[i].Source = x.Name, "sysfs+xrt"
				merged = true
			}
		}
		if !merged {
			devs = append(devs, x)
		}
	}
	return devs
}

type xrtBackend struct{}

func newXRTBackend() (Backend, error) { return xrtBackend{}, nil }

func (xrtBackend) Load(a Artifact, instr []byte) (Kernel, error) {
	ebuf := make([]C.char, errLen)
	bin, name := C.CString(a.Binary), C.CString(a.Kernel)
	defer C.free(unsafe.Pointer(bin))
	defer C.free(unsafe.Pointer(name))
	var k *C.npu_kernel
	if a.IsELF() {
		k = C.npu_xrt_load_elf(0, bin, name, &ebuf[0], errLen)
	} else {
		if len(instr) == 0 {
			return nil, errors.New("empty instruction stream")
		}
		k = C.npu_xrt_load_xclbin(0, bin, name, unsafe.Pointer(&instr[0]), C.size_t(len(instr)), &ebuf[0], errLen)
	}
	if k == nil {
		return nil, shimErr(ebuf)
	}
	return &xrtKernel{k: k}, nil
}

type xrtKernel struct{ k *C.npu_kernel }

func (k *xrtKernel) SyncInstructions() error {
	ebuf := make([]C.char, errLen)
	if C.npu_xrt_sync_instructions(k.k, &ebuf[0], errLen) != 0 {
		return shimErr(ebuf)
	}
	return nil
}

func (k *xrtKernel) Alloc(arg, size int) (Buffer, error) {
	ebuf := make([]C.char, errLen)
	b := C.npu_xrt_bo_alloc(k.k, C.uint(arg), C.size_t(size), &ebuf[0], errLen)
	if b == nil {
		return nil, shimErr(ebuf)
	}
	// The mapping is C memory owned by the buffer object, valid until Close.
	data := unsafe.Slice((*byte)(C.npu_xrt_bo_map(b)), int(C.npu_xrt_bo_size(b)))
	return &xrtBuffer{b: b, data: data}, nil
}

func (k *xrtKernel) Run(bufs []Buffer) error {
	// C memory: a Go slice of C pointers may not be kept by C, and the shim
	// does not keep it, but a C array keeps cgo's pointer checks quiet.
	arr := (*[1 << 20]*C.npu_bo)(C.malloc(C.size_t(len(bufs)) * C.size_t(unsafe.Sizeof((*C.npu_bo)(nil)))))[:len(bufs):len(bufs)]
	defer C.free(unsafe.Pointer(&arr[0]))
	for i, b := range bufs {
		xb, ok := b.(*xrtBuffer)
		if !ok {
			return fmt.Errorf("buffer %d is a %T, not an XRT buffer", i, b)
		}
		arr[i] = xb.b
	}
	ebuf := make([]C.char, errLen)
	if C.npu_xrt_run(k.k, &arr[0], C.size_t(len(bufs)), &ebuf[0], errLen) != 0 {
		return shimErr(ebuf)
	}
	return nil
}

func (k *xrtKernel) Close() error {
	if k.k != nil {
		C.npu_xrt_kernel_free(k.k)
		k.k = nil
	}
	return nil
}

type xrtBuffer struct {
	b    *C.npu_bo
	data []byte
}

func (b *xrtBuffer) Map() []byte { return b.data }

func (b *xrtBuffer) Sync(toDevice bool) error {
	ebuf := make([]C.char, errLen)
	dir := C.int(0)
	if toDevice {
		dir = 1
	}
	if C.npu_xrt_bo_sync(b.b, dir, &ebuf[0], errLen) != 0 {
		return shimErr(ebuf)
	}
	return nil
}

func (b *xrtBuffer) Close() error {
	if b.b != nil {
		C.npu_xrt_bo_free(b.b)
		b.b, b.data = nil, nil
	}
	return nil
}
