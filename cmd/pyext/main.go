//go:build pyext

// Command pyext is the CPython extension module phase0._native: go build
// -tags pyext -buildmode=c-shared against the stable ABI (Py_LIMITED_API
// 3.10), so one build loads into every CPython 3.10+ (`make python-package`).
// The tag keeps `go build ./...` free of Python headers. module.c holds the
// method table; the exports here run the phase0 command line (cmd/internal/cli)
// on a goroutine that the C side waits on with the GIL released.
//
// Python is never initialised here: the extension is loaded by a running
// interpreter. The torch work still happens in the worker child, which is
// the phase0 binary shipped in the wheel (worker.SetExecutable), exactly as
// when the CLI runs.
package main

/*
#cgo CFLAGS: -DPy_LIMITED_API=0x030A0000 -DPY_SSIZE_T_CLEAN
#cgo LDFLAGS: -Wl,--unresolved-symbols=ignore-all
#include <stdlib.h>
*/
import "C"

func main() {}
