package npu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeBackend records every shim call. Its kernel "computes" out = a + b on
// float32 arguments (arg 0 static weights, arg 1 input, last arg output), so
// a test can see what reached the device and what came back.
type fakeBackend struct {
	t        *testing.T
	lockPath string
	calls    []string
	loadErr  error
	syncErr  map[int]error // arg index → error on Sync(toDevice)
	kernels  []*fakeKernel
}

type fakeKernel struct {
	be      *fakeBackend
	art     Artifact
	instr   []byte
	allocs  int
	live    map[*fakeBuffer]bool
	runErr  error
	compute func(bufs []Buffer)
	closed  bool
}

type fakeBuffer struct {
	k         *fakeKernel
	arg       int
	host      []byte
	device    []byte
	closed    bool
	syncedTo  int
	syncedOut int
}

func (b *fakeBackend) Load(a Artifact, instr []byte) (Kernel, error) {
	b.calls = append(b.calls, "load "+filepath.Base(a.Binary))
	b.assertLocked("Load")
	if b.loadErr != nil {
		return nil, b.loadErr
	}
	k := &fakeKernel{be: b, art: a, instr: instr, live: map[*fakeBuffer]bool{}}
	b.kernels = append(b.kernels, k)
	return k, nil
}

// assertLocked checks, through a second open file as another process would,
// that the Runner holds the device lock now.
func (b *fakeBackend) assertLocked(what string) {
	if b.lockPath == "" {
		return
	}
	if lockFree(b.t, b.lockPath) {
		b.t.Errorf("%s ran without the device lock %s held", what, b.lockPath)
	}
}

func lockFree(t *testing.T, path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return true
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatal(err)
	}
	return false
}

func (k *fakeKernel) SyncInstructions() error {
	k.be.calls = append(k.be.calls, "sync-instr")
	return nil
}

func (k *fakeKernel) Alloc(arg, size int) (Buffer, error) {
	k.be.calls = append(k.be.calls, fmt.Sprintf("alloc %d:%d", arg, size))
	k.allocs++
	b := &fakeBuffer{k: k, arg: arg, host: make([]byte, size), device: make([]byte, size)}
	k.live[b] = true
	return b, nil
}

func (k *fakeKernel) Run(bufs []Buffer) error {
	k.be.calls = append(k.be.calls, "run")
	k.be.assertLocked("Run")
	if k.runErr != nil {
		return k.runErr
	}
	if k.compute != nil {
		k.compute(bufs)
	}
	return nil
}

func (k *fakeKernel) Close() error { k.closed = true; return nil }

func (b *fakeBuffer) Map() []byte { return b.host }

func (b *fakeBuffer) Sync(toDevice bool) error {
	if toDevice {
		b.k.be.calls = append(b.k.be.calls, fmt.Sprintf("write %d", b.arg))
		if err := b.k.be.syncErr[b.arg]; err != nil {
			return err
		}
		copy(b.device, b.host)
		b.syncedTo++
	} else {
		b.k.be.calls = append(b.k.be.calls, fmt.Sprintf("read %d", b.arg))
		copy(b.host, b.device)
		b.syncedOut++
	}
	return nil
}

func (b *fakeBuffer) Close() error { b.closed = true; delete(b.k.live, b); return nil }

// artifacts writes an xclbin, its instruction stream and an ELF into dir.
func artifacts(t *testing.T) (xclbin, elf Artifact) {
	dir := t.TempDir()
	for name, data := range map[string][]byte{"k.xclbin": {1}, "insts.bin": {1, 0, 0, 0, 2, 0, 0, 0}, "k.elf": {0x7f}} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Artifact{Binary: filepath.Join(dir, "k.xclbin"), Instructions: filepath.Join(dir, "insts.bin"), Kernel: "MLIR_AIE"},
		Artifact{Binary: filepath.Join(dir, "k.elf"), Kernel: "main:sequence"}
}

func newTestRunner(t *testing.T) (*Runner, *fakeBackend) {
	lock := filepath.Join(t.TempDir(), "npu.lock")
	be := &fakeBackend{t: t, lockPath: lock, syncErr: map[int]error{}}
	r, err := newRunner(withBackend(be), withLockPath(lock))
	if err != nil {
		t.Fatal(err)
	}
	return r, be
}

func TestRunnerPlanAndReuse(t *testing.T) {
	ctx := context.Background()
	r, be := newTestRunner(t)
	xclbin, _ := artifacts(t)
	if err := r.Load(ctx, "add", xclbin); err != nil {
		t.Fatal(err)
	}
	if got := be.kernels[0].instr; len(got) != 8 {
		t.Fatalf("instruction stream = %d bytes, want 8", len(got))
	}
	weights := []float32{10, 20, 30}
	x := []float32{1, 2, 3}
	out := make([]float32, 3)
	args := func() []Arg {
		return []Arg{f32Arg(Static, weights), f32Arg(Input, x), f32Arg(Output, out)}
	}
	be.kernels[0].compute = func(bufs []Buffer) { addDevice(bufs) }

	st, err := r.Run(ctx, "add", "layer0", args()...)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"load k.xclbin", "alloc 0:12", "alloc 1:12", "alloc 2:12", "sync-instr", "write 0", "write 1", "run", "read 2"}
	if got := strings.Join(be.calls, ", "); got != strings.Join(want, ", ") {
		t.Fatalf("first run calls:\n got %s\nwant %s", got, strings.Join(want, ", "))
	}
	if !st.FirstRun || st.Written != 2 || st.BytesWritten != 24 || st.ReadBack != 1 {
		t.Errorf("first run stats = %+v", st)
	}
	if fmt.Sprint(out) != "[11 22 33]" {
		t.Fatalf("out = %v, want [11 22 33]", out)
	}

	// Second run, same key: no allocation, no instruction sync, weights not
	// rewritten — and the device still uses the first weights.
	be.calls = nil
	x[0], x[1], x[2] = 100, 200, 300
	weights[0] = -1 // a changed static input is NOT rewritten under the same key
	st, err = r.Run(ctx, "add", "layer0", args()...)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(be.calls, ", "); got != "write 1, run, read 2" {
		t.Fatalf("second run calls = %s, want write 1, run, read 2", got)
	}
	if st.FirstRun || st.Written != 1 || st.BytesWritten != 12 {
		t.Errorf("second run stats = %+v", st)
	}
	if fmt.Sprint(out) != "[110 220 330]" {
		t.Fatalf("out = %v, want [110 220 330] (resident weights 10,20,30)", out)
	}

	// Another key gets its own buffers and writes its static input once.
	be.calls = nil
	if _, err := r.Run(ctx, "add", "layer1", args()...); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(be.calls, ", "); got != "alloc 0:12, alloc 1:12, alloc 2:12, write 0, write 1, run, read 2" {
		t.Fatalf("new key calls = %s", got)
	}
	if fmt.Sprint(out) != "[99 220 330]" {
		t.Fatalf("out = %v, want [99 220 330]", out)
	}
	if n := be.kernels[0].allocs; n != 6 {
		t.Errorf("%d buffers allocated over 3 runs and 2 keys, want 6", n)
	}

	if !lockFree(t, be.lockPath) {
		t.Error("device lock still held after Run returned")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if k := be.kernels[0]; !k.closed || len(k.live) != 0 {
		t.Errorf("after Close: kernel closed %v, %d buffers still live", k.closed, len(k.live))
	}
}

// addDevice adds device-side float32 buffers: out = w + x.
func addDevice(bufs []Buffer) {
	dev := func(i int) []float32 {
		b := bufs[i].(*fakeBuffer).device
		out := make([]float32, len(b)/4)
		copy(f32Arg(Input, out).Data, b)
		return out
	}
	w, x := dev(0), dev(1)
	out := make([]float32, len(w))
	for i := range out {
		out[i] = w[i] + x[i]
	}
	copy(bufs[2].(*fakeBuffer).device, f32Arg(Output, out).Data)
}

func TestRunnerRolesScratchInOut(t *testing.T) {
	ctx := context.Background()
	r, be := newTestRunner(t)
	_, elf := artifacts(t)
	if err := r.Load(ctx, "k", elf); err != nil {
		t.Fatal(err)
	}
	if be.kernels[0].instr != nil {
		t.Fatal("an ELF artifact must not carry a separate instruction stream")
	}
	args := []Arg{bytesArg(Scratch, I8, make([]byte, 4)), bytesArg(InOut, BF16, make([]byte, 4))}
	for range 2 {
		if _, err := r.Run(ctx, "k", "", args...); err != nil {
			t.Fatal(err)
		}
	}
	want := "load k.elf, alloc 0:4, alloc 1:4, sync-instr, write 0, write 1, run, read 1, write 1, run, read 1"
	if got := strings.Join(be.calls, ", "); got != want {
		t.Fatalf("calls:\n got %s\nwant %s", got, want)
	}
}

func TestRunnerErrors(t *testing.T) {
	ctx := context.Background()
	xclbin, _ := artifacts(t)
	three := func() []Arg {
		return []Arg{f32Arg(Static, make([]float32, 3)), f32Arg(Input, make([]float32, 3)), f32Arg(Output, make([]float32, 3))}
	}
	cases := []struct {
		name    string
		setup   func(r *Runner, be *fakeBackend) error
		wantErr string
	}{
		{"run before load", func(r *Runner, be *fakeBackend) error {
			_, err := r.Run(ctx, "nope", "", three()...)
			return err
		}, `kernel "nope" is not loaded (call Load first)`},
		{"missing instructions", func(r *Runner, be *fakeBackend) error {
			a := xclbin
			a.Instructions = filepath.Join(t.TempDir(), "gone.bin")
			return r.Load(ctx, "k", a)
		}, "gone.bin: no such file"},
		{"ragged instructions", func(r *Runner, be *fakeBackend) error {
			a := xclbin
			a.Instructions = filepath.Join(t.TempDir(), "odd.bin")
			os.WriteFile(a.Instructions, []byte{1, 2, 3}, 0o644)
			return r.Load(ctx, "k", a)
		}, "3 bytes is not a non-empty stream of 32-bit instruction words"},
		{"missing binary", func(r *Runner, be *fakeBackend) error {
			a := xclbin
			a.Binary = filepath.Join(t.TempDir(), "none.xclbin")
			return r.Load(ctx, "k", a)
		}, "none.xclbin: no such file"},
		{"no kernel name", func(r *Runner, be *fakeBackend) error {
			a := xclbin
			a.Kernel = ""
			return r.Load(ctx, "k", a)
		}, "names no kernel"},
		{"backend load fails", func(r *Runner, be *fakeBackend) error {
			be.loadErr = errors.New("kernel MLIR_AIE not in xclbin")
			return r.Load(ctx, "k", xclbin)
		}, `load "k" from ` + xclbin.Binary + ` (kernel "MLIR_AIE"): kernel MLIR_AIE not in xclbin`},
		{"double load", func(r *Runner, be *fakeBackend) error {
			r.Load(ctx, "k", xclbin)
			return r.Load(ctx, "k", xclbin)
		}, `kernel "k" is already loaded`},
		{"ragged buffer", func(r *Runner, be *fakeBackend) error {
			r.Load(ctx, "k", xclbin)
			_, err := r.Run(ctx, "k", "", bytesArg(Input, F32, make([]byte, 6)))
			return err
		}, "arg 0 (input f32): 6 bytes is not a whole number of 4-byte elements"},
		{"unknown dtype", func(r *Runner, be *fakeBackend) error {
			r.Load(ctx, "k", xclbin)
			_, err := r.Run(ctx, "k", "", Arg{Name: "w", DType: "f8", Data: []byte{1}})
			return err
		}, `arg 0 (w, input f8): unknown dtype "f8"`},
		{"size changed under a key", func(r *Runner, be *fakeBackend) error {
			r.Load(ctx, "k", xclbin)
			if _, err := r.Run(ctx, "k", "L0", three()...); err != nil {
				return err
			}
			args := three()
			args[1] = f32Arg(Input, make([]float32, 4))
			_, err := r.Run(ctx, "k", "L0", args...)
			return err
		}, `key "L0": arg 1 (input f32): 16 bytes of f32, but the key's buffer holds 12 bytes of f32`},
		{"kernel run fails", func(r *Runner, be *fakeBackend) error {
			r.Load(ctx, "k", xclbin)
			be.kernels[0].runErr = errors.New("ERT_CMD_STATE_TIMEOUT")
			_, err := r.Run(ctx, "k", "", three()...)
			return err
		}, `run "k" key "k": kernel run: ERT_CMD_STATE_TIMEOUT`},
		{"lock busy past deadline", func(r *Runner, be *fakeBackend) error {
			r.Load(ctx, "k", xclbin)
			f, _ := os.OpenFile(be.lockPath, os.O_RDWR|os.O_CREATE, 0o644)
			defer f.Close()
			syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
			c, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			_, err := r.Run(c, "k", "", three()...)
			return err
		}, "(another NPU user holds it): context deadline exceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, be := newTestRunner(t)
			err := tc.setup(r, be)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if !lockFree(t, be.lockPath) && tc.name != "lock busy past deadline" {
				t.Error("device lock held after an error")
			}
		})
	}
}

// A first run that fails while writing must not leave the key marked as
// written: the next run allocates afresh and writes the static input.
func TestRunnerFailedFirstRunRewritesStatic(t *testing.T) {
	ctx := context.Background()
	r, be := newTestRunner(t)
	xclbin, _ := artifacts(t)
	if err := r.Load(ctx, "k", xclbin); err != nil {
		t.Fatal(err)
	}
	args := []Arg{f32Arg(Static, []float32{1}), f32Arg(Output, make([]float32, 1))}
	be.syncErr[0] = errors.New("DMA error")
	_, err := r.Run(ctx, "k", "L", args...)
	if err == nil || !strings.Contains(err.Error(), "arg 0 (static f32): sync to device: DMA error") {
		t.Fatalf("err = %v", err)
	}
	if n := len(be.kernels[0].live); n != 0 {
		t.Fatalf("%d buffers leaked after a failed first run", n)
	}
	delete(be.syncErr, 0)
	be.calls = nil
	if _, err := r.Run(ctx, "k", "L", args...); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(be.calls, ", "); got != "alloc 0:4, alloc 1:4, write 0, run, read 1" {
		t.Fatalf("retry calls = %s", got)
	}
}

func TestRunnerWithoutBackend(t *testing.T) {
	_, err := newRunner(withLockPath(filepath.Join(t.TempDir(), "l")))
	if xrtBuilt {
		t.Skip("built with xrt: newRunner opens the real device")
	}
	if !errors.Is(err, ErrNoXRT) || !strings.Contains(err.Error(), "rebuild with -tags xrt") {
		t.Fatalf("err = %v, want ErrNoXRT", err)
	}
}
