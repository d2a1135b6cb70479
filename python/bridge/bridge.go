// Package bridge embeds CPython in the Go process through a thin cgo layer
// over the C API. It is the only package in phase0 with cgo or Python code.
//
// phase0 is not linked against libpython: Start asks the given python for
// its version and shared library (Inspect), loads that libpython with dlopen
// and reaches the C API through a table of function pointers (capi.h), so one
// binary embeds any CPython 3.10–3.14 built with --enable-shared, in the venv
// the user chose.
//
// CPython can be initialized only once per process: extension modules such as
// NumPy and torch do not survive Py_FinalizeEx followed by a second
// initialization, and a process holds one libpython. Start therefore succeeds
// at most once per process, and a second call (even after Close) returns
// ErrAlreadyStarted. Code that needs a fresh interpreter, another Python
// version, or that must survive a crash in native code, runs Python in a
// child process through package worker.
//
// All Python work happens on one goroutine locked to the OS thread that
// initialized the interpreter; the GIL is released while that goroutine waits
// for the next call, so Python threads started by libraries keep running.
//
// The interpreter also gets one module of phase0's own, _phase0_reuse
// (reuse.c): a NumPy data allocator that hands freed large blocks to the next
// array of the same size and carves arrays out of the blocks it lets go of,
// which quantized gate 1 turns on while a tree folder's loader runs
// (docs/worker.md).
package bridge

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unicode/utf8"
	"unsafe"
)

var (
	// ErrAlreadyStarted is returned by every Start after the first one that
	// got past Inspect (whether or not that one succeeded: a process loads at
	// most one libpython).
	ErrAlreadyStarted = errors.New("bridge: python was already started in this process (CPython can be initialized once)")
	// ErrClosed is returned by Call after Close.
	ErrClosed = errors.New("bridge: interpreter is closed")
	// ErrResult is wrapped by errors about a value a Python function returned
	// that the bridge cannot pass back to Go.
	ErrResult = errors.New("bridge: unusable result")
)

// Options says which Python installation to run.
type Options struct {
	// Executable is the absolute path of the venv's python. The interpreter
	// takes its sys.prefix, and so its site-packages, from it.
	Executable string
	// ExtraPath is prepended to sys.path, in order (ExtraPath[0] first).
	ExtraPath []string
}

// PyError is a Python exception raised by the called function (or by
// importing its module).
type PyError struct {
	Type      string // qualified exception type, e.g. "ValueError"
	Message   string // str(exception)
	Traceback string // traceback.format_exception output
}

func (e *PyError) Error() string {
	if e.Message == "" {
		return "python raised " + e.Type
	}
	return fmt.Sprintf("python raised %s: %s", e.Type, e.Message)
}

// Interp is the process's embedded interpreter.
type Interp struct {
	calls     chan call
	done      chan struct{} // closed once the serving goroutine has finalized Python
	closeOnce sync.Once
	closeErr  error
	prefix    string
}

type call struct {
	module, fn string
	arg        []byte
	finalize   bool
	reply      chan reply
}

type reply struct {
	json   []byte
	floats []float32
	err    error
}

var (
	startMu sync.Mutex
	started bool
)

// Start inspects opts.Executable (see Inspect, whose refusals wrap
// ErrUnsupportedPython), loads its libpython, initializes the interpreter as
// that python would start (isolated mode: PYTHON* environment variables and
// user site-packages are ignored; sys.executable, sys.prefix and
// site-packages are the venv's), and prepends opts.ExtraPath to sys.path.
func Start(opts Options) (*Interp, error) {
	env, err := Inspect(opts.Executable)
	if err != nil {
		return nil, err
	}

	startMu.Lock()
	if started {
		startMu.Unlock()
		return nil, ErrAlreadyStarted
	}
	started = true
	startMu.Unlock()

	it := &Interp{calls: make(chan call), done: make(chan struct{})}
	ready := make(chan error, 1)
	go it.serve(opts, env, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return it, nil
}

// Prefix is sys.prefix of the running interpreter (the venv directory when
// Executable belongs to a venv).
func (it *Interp) Prefix() string { return it.prefix }

// serve owns the interpreter for the life of the process. The OS thread stays
// locked and is discarded by the Go runtime when serve returns, because
// CPython remembers it as the main thread.
func (it *Interp) serve(opts Options, env Python, ready chan<- error) {
	runtime.LockOSThread()
	defer close(it.done)

	if err := initialize(opts, env, &it.prefix); err != nil {
		ready <- err
		return
	}
	ready <- nil

	for c := range it.calls {
		if c.finalize {
			var err error
			if C.p0_finalize() != 0 {
				err = errors.New("bridge: finalizing python failed (buffered data could not be flushed)")
			}
			c.reply <- reply{err: err}
			return
		}
		c.reply <- invoke(c)
	}
}

func initialize(opts Options, env Python, prefix *string) error {
	var errbuf [1024]C.char
	lib := C.CString(env.Library)
	defer C.free(unsafe.Pointer(lib))
	want := C.CString(fmt.Sprintf("%d.%d.", env.Major, env.Minor))
	defer C.free(unsafe.Pointer(want))
	if C.p0_load(lib, want, &errbuf[0], C.size_t(len(errbuf))) != 0 {
		return fmt.Errorf("bridge: python %s: %s", opts.Executable, C.GoString(&errbuf[0]))
	}
	// The program name is what the interpreter reported as sys.executable
	// (for a venv, the venv's bin/python; for a pyenv shim, the real binary),
	// so the embedded one finds the same pyvenv.cfg and prefix.
	program := wideString(env.Program)
	if C.p0_init(&program[0], C.size_t(len(program)-1)) != 0 {
		return errors.New("bridge: out of memory initializing python")
	}

	C.p0_enter()
	defer C.p0_leave()
	for i := len(opts.ExtraPath) - 1; i >= 0; i-- {
		dir := C.CString(opts.ExtraPath[i])
		rc := C.p0_prepend_sys_path(dir, &errbuf[0], C.size_t(len(errbuf)))
		C.free(unsafe.Pointer(dir))
		if rc != 0 {
			return fmt.Errorf("bridge: adding %s to sys.path: %s", opts.ExtraPath[i], C.GoString(&errbuf[0]))
		}
	}
	// NumPy's allocator for code phase0 runs but cannot change (reuse.c):
	// the module is there before anything is imported, used only by the
	// shim code that turns it on.
	if C.p0_expose_reuse(&errbuf[0], C.size_t(len(errbuf))) != 0 {
		return fmt.Errorf("bridge: %s", C.GoString(&errbuf[0]))
	}
	got := map[string]string{}
	for _, name := range []string{"prefix", "executable"} {
		var buf [4096]C.char
		cname := C.CString(name)
		rc := C.p0_sys_str(cname, &buf[0], C.size_t(len(buf)))
		C.free(unsafe.Pointer(cname))
		if rc != 0 {
			return fmt.Errorf("bridge: python from %s started without sys.%s", opts.Executable, name)
		}
		got[name] = C.GoString(&buf[0])
	}
	*prefix = got["prefix"]
	// The same python run as a program reported env.Prefix: anything else
	// means another site-packages would be imported.
	if !samePath(got["prefix"], env.Prefix) {
		return fmt.Errorf("bridge: python from %s started with sys.prefix %s, but running it reports %s; "+
			"its site-packages would not be used", opts.Executable, got["prefix"], env.Prefix)
	}
	if got["executable"] != env.Program {
		return fmt.Errorf("bridge: python from %s started with sys.executable %s, but running it reports %s",
			opts.Executable, got["executable"], env.Program)
	}
	return nil
}

// wideString converts a path to the NUL-terminated wchar_t (UTF-32 on Linux)
// string Py_SetProgramName takes. Bytes that are not UTF-8 become lone
// surrogates U+DC80..U+DCFF, as Python's own decoding (surrogateescape) does,
// so they turn back into the same bytes when Python opens the file.
func wideString(s string) []C.wchar_t {
	out := make([]C.wchar_t, 0, len(s)+1)
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && n == 1 {
			r = 0xDC00 | rune(s[0])
		}
		out = append(out, C.wchar_t(r))
		s = s[n:]
	}
	return append(out, 0)
}

// invoke runs on the interpreter thread.
func invoke(c call) reply {
	mod := C.CString(c.module)
	defer C.free(unsafe.Pointer(mod))
	fn := C.CString(c.fn)
	defer C.free(unsafe.Pointer(fn))
	// A Go pointer may be passed for the duration of the call: the bytes hold no pointers.
	var arg *C.char // PyUnicode_DecodeUTF8 accepts NULL with length 0
	if len(c.arg) > 0 {
		arg = (*C.char)(unsafe.Pointer(&c.arg[0]))
	}

	C.p0_enter()
	defer C.p0_leave()
	var r C.p0_result
	C.p0_call(mod, fn, arg, C.Py_ssize_t(len(c.arg)), &r)
	defer C.p0_result_clear(&r)

	if r.failed != 0 {
		if r.is_py_error != 0 {
			return reply{err: &PyError{
				Type:      pyString(r.err_type),
				Message:   pyString(r.err_msg),
				Traceback: pyString(r.err_tb),
			}}
		}
		return reply{err: fmt.Errorf("%w: %s", ErrResult, C.GoString(&r.bridge_err[0]))}
	}
	out := reply{json: C.GoBytes(unsafe.Pointer(r.json), C.int(r.json_len))}
	if r.has_view != 0 {
		out.floats = make([]float32, int(r.n_floats))
		if r.n_floats > 0 {
			copy(out.floats, unsafe.Slice((*float32)(unsafe.Pointer(r.floats)), int(r.n_floats)))
		}
	}
	return out
}

func pyString(s *C.PyObject) string {
	var n C.Py_ssize_t
	p := C.p0_str(s, &n)
	if p == nil {
		return ""
	}
	return C.GoStringN(p, C.int(n))
}

// Call imports module and calls module.fn(argJSON) with the JSON as a str.
// The function returns either a str (JSON) or a tuple (str, buffer) whose
// buffer is C-contiguous float32; those floats are copied into the returned
// slice (nil when the function returned only a str). A Python exception is
// returned as *PyError; a return value of another shape wraps ErrResult.
func (it *Interp) Call(module, fn string, argJSON []byte) (resultJSON []byte, floats []float32, err error) {
	c := call{module: module, fn: fn, arg: argJSON, reply: make(chan reply, 1)}
	select {
	case it.calls <- c:
	case <-it.done:
		return nil, nil, ErrClosed
	}
	r := <-c.reply
	return r.json, r.floats, r.err
}

// Close finalizes the interpreter (running atexit handlers and flushing
// sys.stdout/sys.stderr). Python cannot be started again in this process.
func (it *Interp) Close() error {
	it.closeOnce.Do(func() {
		c := call{finalize: true, reply: make(chan reply, 1)}
		select {
		case it.calls <- c:
			it.closeErr = (<-c.reply).err
		case <-it.done:
		}
	})
	return it.closeErr
}

// ResetFatalSignals hands SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT back to
// the kernel's default action. Meant for a child process that runs Python
// work (package worker): a crash in native code then ends it by that signal,
// which its parent can report, instead of a Go runtime panic report. It also
// turns a nil dereference in Go code into a plain SIGSEGV, so never call it in
// a process that is not disposable.
func ResetFatalSignals() error {
	if C.p0_reset_fatal_signals() != 0 {
		return errors.New("bridge: resetting fatal signal handlers failed")
	}
	return nil
}
