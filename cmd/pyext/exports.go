//go:build pyext

package main

/*
#include <stdlib.h>
extern char **environ;
*/
import "C"

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unsafe"

	"phase0/cmd/internal/cli"
	"phase0/python/warm"
	"phase0/python/worker"
)

// version is set at build time like the CLI's: -ldflags "-X main.version=…".
var version = "0.1.0-dev"

// Output modes of a call (module.c passes them through).
const (
	captureAll    = 0 // stdout and stderr returned to Python (the API)
	streamStderr  = 1 // stdout returned, progress live on fd 2 (progress=True)
	streamAll     = 2 // both on fds 1 and 2 (python -m phase0)
	maxCapturedMB = 64
)

// call is one running invocation.
type call struct {
	cancel context.CancelFunc
	done   chan struct{}
	code   int
	stdout bytes.Buffer
	stderr bytes.Buffer
}

// sessions lends this process's calls warm Python sessions: a second
// phase0.run() or phase0.baseline() in the same program does not import
// torch again (each call resets the session and has its own time limit). Two
// at most at once, a third concurrent call waits for one; a session nobody
// borrowed for five minutes is closed, so an idle notebook does not keep
// torch's memory.
var sessions = warm.New(2, 5*time.Minute)

var (
	callsMu sync.Mutex
	calls   = map[int64]*call{}
	nextID  int64
	envMu   sync.Mutex
)

// syncEnv makes Go's environment equal the C one. A cgo program copies the
// environment once at load; the Python caller may set os.environ (HF_HOME,
// PHASE0_PYTHON …) any time after import, and the CLI and the worker child
// must see what the caller sees. It runs with the GIL held, so Python cannot
// change the environment meanwhile.
func syncEnv() {
	want := map[string]string{}
	for p := C.environ; p != nil && *p != nil; p = (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p))) {
		kv := C.GoString(*p)
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			if _, dup := want[k]; !dup {
				want[k] = v
			}
		}
	}
	envMu.Lock()
	defer envMu.Unlock()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := want[k]; !ok && k != "" {
			os.Unsetenv(k)
		}
	}
	for k, v := range want {
		if cur, ok := os.LookupEnv(k); !ok || cur != v {
			os.Setenv(k, v)
		}
	}
}

// p0start begins one invocation of the command line and returns its handle.
// overrides is a JSON object of settings by YAML key. It copies everything
// it is given before returning.
//
//export p0start
func p0start(argv **C.char, argc C.int, overrides *C.char, mode C.int) C.longlong {
	args := make([]string, 0, int(argc))
	for _, a := range unsafe.Slice(argv, int(argc)) {
		args = append(args, C.GoString(a))
	}
	ov := C.GoString(overrides)
	syncEnv()

	ctx, cancel := context.WithCancel(context.Background())
	c := &call{cancel: cancel, done: make(chan struct{})}
	callsMu.Lock()
	nextID++
	id := nextID
	calls[id] = c
	callsMu.Unlock()

	go func() {
		defer close(c.done)
		defer cancel()
		var stdout, stderr io.Writer = &limited{b: &c.stdout}, &limited{b: &c.stderr}
		switch mode {
		case streamStderr:
			stderr = os.Stderr
		case streamAll:
			stdout, stderr = os.Stdout, os.Stderr
		}
		o := cli.Options{Version: version, Sessions: sessions}
		if ov != "" {
			// Numbers keep their text: 10**400 or 2**31-1 reaches the
			// settings parser as written, to be refused there by range.
			dec := json.NewDecoder(strings.NewReader(ov))
			dec.UseNumber()
			if err := dec.Decode(&o.Overrides); err != nil {
				fmt.Fprintf(stderr, "phase0: options are not a JSON object: %v\n", err)
				c.code = 2
				return
			}
		}
		c.code = cli.Execute(ctx, args, stdout, stderr, o)
	}()
	return C.longlong(id)
}

// limited keeps at most maxCapturedMB of output, so a runaway child cannot
// fill the caller's memory through the progress stream. Progress is written
// from several goroutines (stages, the worker's output copier).
type limited struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (l *limited) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := maxCapturedMB<<20 - l.b.Len(); room < len(p) {
		if room > 0 {
			l.b.Write(p[:room])
		}
		return len(p), nil
	}
	return l.b.Write(p)
}

func lookup(h C.longlong) *call {
	callsMu.Lock()
	defer callsMu.Unlock()
	return calls[int64(h)]
}

// p0wait waits up to ms milliseconds (ms < 0: forever) and reports 1 when
// the invocation has finished.
//
//export p0wait
func p0wait(h C.longlong, ms C.int) C.int {
	c := lookup(h)
	if c == nil {
		return 1
	}
	if ms < 0 {
		<-c.done
		return 1
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-c.done:
		return 1
	case <-t.C:
		return 0
	}
}

// p0cancel cancels the invocation's context: the worker child is killed and
// nothing more is written.
//
//export p0cancel
func p0cancel(h C.longlong) {
	if c := lookup(h); c != nil {
		c.cancel()
	}
}

// p0finish returns the exit code of a finished invocation and hands its
// captured output to the caller (malloc'd; the caller frees), then forgets it.
//
//export p0finish
func p0finish(h C.longlong, out **C.char, outLen *C.size_t, errOut **C.char, errLen *C.size_t) C.int {
	callsMu.Lock()
	c := calls[int64(h)]
	delete(calls, int64(h))
	callsMu.Unlock()
	if c == nil {
		return -1
	}
	<-c.done // the writers are done: the buffers are read without their locks
	*out, *outLen = (*C.char)(C.CBytes(c.stdout.Bytes())), C.size_t(c.stdout.Len())
	*errOut, *errLen = (*C.char)(C.CBytes(c.stderr.Bytes())), C.size_t(c.stderr.Len())
	return C.int(c.code)
}

// p0setworker names the phase0 binary the worker child runs.
//
//export p0setworker
func p0setworker(path *C.char) { worker.SetExecutable(C.GoString(path)) }

// p0version returns the version (malloc'd; the caller frees).
//
//export p0version
func p0version() *C.char { return C.CString(version) }
