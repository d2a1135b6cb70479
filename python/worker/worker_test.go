package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"phase0/internal/testenv"
	"phase0/python/bridge"
)

const childEnv = "PHASE0_WORKER_TEST_CHILD"

// The test binary doubles as the worker executable: Run re-executes it with
// childEnv set, and TestMain hands over to Main.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(Main())
	}
	if dir := os.Getenv(parentEnv); dir != "" {
		os.Exit(hangingParent(dir))
	}
	os.Exit(m.Run())
}

// parentEnv makes this test binary a parent of a worker (hangingParent),
// which the test then kills as a user kills phase0; parentPyEnv names the
// worker's python.
const (
	parentEnv   = "PHASE0_WORKER_TEST_PARENT"
	parentPyEnv = "PHASE0_WORKER_TEST_PARENT_PYTHON"
)

// hangingParent starts a session whose op starts a grandchild and hangs,
// writes the worker's pid to dir/worker.pid, and waits in the call.
func hangingParent(dir string) int {
	opts, err := optionsFor(os.Getenv(parentPyEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := Start(context.Background(), opts, "p0test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := os.WriteFile(filepath.Join(dir, "worker.pid.tmp"), []byte(strconv.Itoa(s.Pid())), 0o644); err != nil ||
		os.Rename(filepath.Join(dir, "worker.pid.tmp"), filepath.Join(dir, "worker.pid")) != nil {
		return 1
	}
	_, err = s.Call("spawn_and_sleep", map[string]string{"pid_file": filepath.Join(dir, "grandchild.pid")}, nil)
	fmt.Fprintln(os.Stderr, "the call returned:", err)
	return 1
}

func testOptions(tb testing.TB) Options {
	tb.Helper()
	opts, err := optionsFor(testenv.Python(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return opts
}

// optionsFor starts this test binary as the worker, on py, with the test module.
func optionsFor(py string) (Options, error) {
	exe, err := os.Executable()
	if err != nil {
		return Options{}, err
	}
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		return Options{}, err
	}
	return Options{
		Python:    py,
		ExtraPath: []string{testdata},
		Env:       []string{childEnv + "=1"},
		Exe:       []string{exe},
		Timeout:   5 * time.Minute, // a safety net for a broken build, never reached when passing
	}, nil
}

// syncBuffer is a bytes.Buffer safe for the tee's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start opens a session on the test module and closes it when the test ends.
func start(t testing.TB, opts Options) *Session {
	t.Helper()
	s, err := Start(context.Background(), opts, "p0test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func checkBitPattern(t *testing.T, got []float32, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("got %d floats, want %d", len(got), n)
	}
	for i := range got {
		if want := uint32(i) * 2654435761; math.Float32bits(got[i]) != want {
			t.Fatalf("float %d has bits %#08x, want %#08x", i, math.Float32bits(got[i]), want)
		}
	}
}

func TestCallEchoAndFloats(t *testing.T) {
	s := start(t, testOptions(t))
	const n = 151936
	var echo struct{ Echo any }
	floats, err := s.Call("echo", map[string]any{"x": []any{1, "two"}}, &echo)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(echo.Echo) != "map[x:[1 two]]" || floats != nil {
		t.Errorf("echo = %v with floats %v, want the arguments back and no floats", echo.Echo, floats)
	}
	var meta struct{ N int }
	floats, err = s.Call("bit_pattern", map[string]int{"n": n}, &meta)
	if err != nil || meta.N != n {
		t.Fatalf("bit_pattern: %v, n %d", err, meta.N)
	}
	checkBitPattern(t, floats, n)
	if _, err := s.Call("echo", nil, &echo); err != nil || fmt.Sprint(echo.Echo) != "map[]" {
		t.Errorf("echo with nil args = %v, %v; want {} sent", echo.Echo, err)
	}
	floats, err = s.Call("bit_pattern", map[string]int{"n": 0}, nil)
	if err != nil || floats == nil || len(floats) != 0 {
		t.Errorf("empty array: got %v, %v; want an empty non-nil slice", floats, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call("echo", nil, nil); err == nil {
		t.Error("Call after Close succeeded")
	}
}

func TestCallRaisedKeepsSession(t *testing.T) {
	s := start(t, testOptions(t))
	tests := []struct {
		op        string
		typ       string
		message   string
		traceback string
	}{
		{"raise_value_error", "ValueError", "bad value 7", `raise ValueError(f"bad value {value}")`},
		{"no_such_op", "AttributeError", "no_such_op", "AttributeError: module 'p0test' has no attribute 'no_such_op'"},
		{"not_json", "BridgeError", "p0test.not_json returned a str that is not JSON", ""},
	}
	for _, tc := range tests {
		t.Run(tc.op, func(t *testing.T) {
			_, err := s.Call(tc.op, nil, nil)
			var we *Error
			if !errors.As(err, &we) || we.Kind != KindRaised {
				t.Fatalf("error %v (%T), want a raised *Error", err, err)
			}
			var pe *bridge.PyError
			if !errors.As(err, &pe) || pe != we.Py {
				t.Errorf("the Python exception is not reachable with errors.As")
			}
			if we.Op != tc.op || pe.Type != tc.typ || !strings.Contains(pe.Message, tc.message) {
				t.Errorf("Error = {Op %q, Type %q, Message %q}, want {%q, %q, ~%q}", we.Op, pe.Type, pe.Message, tc.op, tc.typ, tc.message)
			}
			if !strings.Contains(pe.Traceback, tc.traceback) {
				t.Errorf("Traceback does not contain %q:\n%s", tc.traceback, pe.Traceback)
			}
			if r := we.Reasons(); !strings.Contains(r[0], tc.typ) {
				t.Errorf("Reasons()[0] = %q, want the exception type", r[0])
			}
			// The exception ends the op, not the session.
			var echo struct{ Echo int }
			if _, err := s.Call("echo", 5, &echo); err != nil || echo.Echo != 5 {
				t.Errorf("echo after the exception = %v, %v", echo.Echo, err)
			}
		})
	}
}

func TestCallNoisyOutput(t *testing.T) {
	opts := testOptions(t)
	var tee syncBuffer
	opts.Stderr = &tee
	s := start(t, opts)
	const lines = 3000 // ~100 KiB of output, more than the kept tail
	var got struct{ Lines int }
	if _, err := s.Call("noisy", map[string]int{"lines": lines}, &got); err != nil || got.Lines != lines {
		t.Fatalf("noisy = %d, %v", got.Lines, err)
	}
	floats, err := s.Call("bit_pattern", map[string]int{"n": 4096}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkBitPattern(t, floats, 4096)
	s.Close()
	out := tee.String()
	for _, w := range []string{"stdout line 0 ", fmt.Sprintf("stderr line %d", lines-1), "raw frame-like bytes on fd 1", "noisy: END MARKER"} {
		if !strings.Contains(out, w) {
			t.Errorf("teed output lacks %q", w)
		}
	}
}

func TestCallCrash(t *testing.T) {
	opts := testOptions(t)
	tests := []struct{ op, cause, announced string }{
		{"segfault", "killed by signal SIGSEGV", "about to segfault"},
		{"abort", "killed by signal SIGABRT", "about to abort"},
		{"exit3", "exit status 3", "about to exit with status 3"},
		{"exit0", "exited with status 0 without answering", "about to exit with status 0"},
		{"sigkill_self", "killed (likely out of memory)", "about to SIGKILL itself"},
	}
	for _, tc := range tests {
		t.Run(tc.op, func(t *testing.T) {
			s := start(t, opts)
			var echo struct{ Echo int }
			if _, err := s.Call("echo", 1, &echo); err != nil {
				t.Fatal(err)
			}
			_, err := s.Call(tc.op, nil, nil)
			var we *Error
			if !errors.As(err, &we) || we.Kind != KindCrashed {
				t.Fatalf("error %v (%T), want a crashed *Error", err, err)
			}
			if we.Cause != tc.cause || we.Op != tc.op {
				t.Errorf("Error{Op %q, Cause %q}, want {%q, %q}", we.Op, we.Cause, tc.op, tc.cause)
			}
			if !strings.Contains(we.Tail, tc.announced) {
				t.Errorf("Tail lacks %q:\n%s", tc.announced, we.Tail)
			}
			if !strings.Contains(err.Error(), tc.cause) || !strings.Contains(err.Error(), tc.announced) {
				t.Errorf("Error() = %q, want the cause and the last output", err)
			}
			// A dead session answers every later call with the same error.
			if _, err2 := s.Call("echo", 1, nil); err2 != err {
				t.Errorf("call after the crash = %v, want the crash again", err2)
			}
		})
	}
}

func TestSessionTimeoutKillsProcessGroup(t *testing.T) {
	opts := testOptions(t)
	opts.Timeout = 3 * time.Second
	pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
	s := start(t, opts)
	if _, err := s.Call("echo", nil, nil); err != nil {
		t.Fatal(err)
	}
	_, err := s.Call("spawn_and_sleep", map[string]string{"pid_file": pidFile}, nil)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v (%T), want ErrTimeout and context.DeadlineExceeded", err, err)
	}
	var we *Error
	if !errors.As(err, &we) || we.Kind != KindTimedOut || we.Op != "spawn_and_sleep" || !strings.Contains(we.Tail, "about to sleep") {
		t.Errorf("Error = %+v, want a timeout in op spawn_and_sleep with its output", we)
	}
	waitGone(t, pidFile)
}

// TestKilledParentLeavesNoProcess: a parent killed with SIGKILL (phase0
// killed by the OOM killer or kill -9, which runs no cleanup of its own)
// takes its worker down (Pdeathsig), and the worker takes its process
// group, the grandchild an op started (a runner's subprocess), with it.
// Every phase0 worker is started this way (spawn), a run's as a test's.
func TestKilledParentLeavesNoProcess(t *testing.T) {
	py := testenv.Python(t)
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(exe, "-test.run=^$")
	parent.Env = append(os.Environ(), parentEnv+"="+dir, parentPyEnv+"="+py)
	var stderr syncBuffer
	parent.Stderr = &stderr
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { parent.Wait(); close(done) }()
	t.Cleanup(func() { parent.Process.Kill(); <-done })
	pids := map[string]int{}
	for _, name := range []string{"worker", "grandchild"} {
		for pids[name] == 0 {
			if b, err := os.ReadFile(filepath.Join(dir, name+".pid")); err == nil {
				pids[name], _ = strconv.Atoi(string(b))
				break
			}
			select {
			case <-done:
				t.Fatalf("the parent exited before its %s started:\n%s", name, stderr.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	for name, pid := range pids {
		if !testenv.Alive(pid) {
			t.Fatalf("the %s (pid %d) is not running before the kill", name, pid)
		}
	}
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	testenv.WaitGone(t, "after SIGKILL of the parent", pids)
}

// waitGone reads the pid an op wrote and waits for that process to be gone.
func waitGone(t *testing.T, pidFile string) {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the op never recorded its grandchild (timeout too short for this machine?): %v", err)
	}
	pid, err := strconv.Atoi(string(data))
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, "the op's grandchild", map[string]int{"grandchild": pid})
}

// TestRunEveryPython runs the worker (this one test binary) in every
// interpreter make test prepared: the default venv and $PHASE0_TEST_PYTHONS.
func TestRunEveryPython(t *testing.T) {
	base := testOptions(t)
	for _, py := range testenv.Pythons(t) {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(py))), func(t *testing.T) {
			opts := base
			opts.Python = py
			s := start(t, opts)
			var echo struct{ Echo struct{ Py string } }
			if _, err := s.Call("echo", map[string]string{"py": py}, &echo); err != nil || echo.Echo.Py != py {
				t.Fatalf("echo: %v, %q; want the echo of %s", err, echo.Echo.Py, py)
			}
			floats, err := s.Call("bit_pattern", map[string]int{"n": 1000}, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkBitPattern(t, floats, 1000)
		})
	}
}

func TestSessionCancelled(t *testing.T) {
	opts := testOptions(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Start(ctx, opts, "p0test")
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Fatalf("error %v, want context.Canceled and not ErrTimeout", err)
	}

	// Cancelled mid-call: the call returns promptly and the group is gone.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	s, err := Start(ctx, opts, "p0test")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
	go func() {
		for i := 0; i < 200; i++ {
			if _, err := os.Stat(pidFile); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	began := time.Now()
	_, err = s.Call("spawn_and_sleep", map[string]string{"pid_file": pidFile}, nil)
	var we *Error
	if !errors.As(err, &we) || we.Kind != KindCancelled || !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want a cancelled *Error wrapping context.Canceled", err)
	}
	if d := time.Since(began); d > 30*time.Second {
		t.Errorf("the cancelled call took %s", d)
	}
	waitGone(t, pidFile)
}

func TestStartError(t *testing.T) {
	opts := testOptions(t)
	py := filepath.Join(t.TempDir(), "bin", "python")
	if err := os.MkdirAll(filepath.Dir(py), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(py, []byte("#!/bin/sh\necho Python 2.7.18\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		python string
		module string
		is     error
		want   string
	}{
		{"unsupported python", py, "p0test", ErrStart, "says it is Python 2.7.18"},
		{"relative python", "python3", "p0test", nil, `python "python3" is not an absolute path`},
		{"no module", opts.Python, "", nil, "no module named"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			o.Python = tc.python
			s, err := Start(context.Background(), o, tc.module)
			if err == nil {
				s.Close()
				t.Fatal("Start succeeded, want an error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v does not wrap %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func BenchmarkCallLogits(b *testing.B) {
	s := start(b, testOptions(b))
	const vocab = 151936
	b.SetBytes(vocab * 4)
	for b.Loop() {
		floats, err := s.Call("logits", map[string]int{"n": vocab}, nil)
		if err != nil || len(floats) != vocab {
			b.Fatalf("logits: %d floats, %v", len(floats), err)
		}
	}
}

// BenchmarkStartup is the fixed cost of one session: fork, exec, Python start
// (the test module imports nothing heavy), one echo, finalize.
func BenchmarkStartup(b *testing.B) {
	opts := testOptions(b)
	for b.Loop() {
		s, err := Start(context.Background(), opts, "p0test")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Call("echo", nil, nil); err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

func TestCallTorch(t *testing.T) {
	opts := testOptions(t)
	var out syncBuffer
	opts.Stderr = &out
	s := start(t, opts)
	var got struct {
		Torch string
		Sum   float64
	}
	floats, err := s.Call("torch_sum", map[string]int{"n": 5}, &got)
	if err != nil {
		t.Fatalf("%v\noutput:\n%s", err, out.String())
	}
	if got.Torch == "" || got.Sum != 10 || len(floats) != 5 || floats[4] != 4 {
		t.Errorf("torch_sum = %+v with floats %v, want sum 10 and 0..4", got, floats)
	}
	s.Close()
	if s := out.String(); s != "" {
		t.Errorf("the child printed %q; finalizing torch should be quiet", s)
	}
}

// TestBoundContext: a context bound to a running session ends it as a
// session's own context would (a deadline is a time-out, a cancel a
// cancellation, the op's grandchild dies with it); unbound in time, the
// session stays usable.
func TestBoundContext(t *testing.T) {
	t.Run("unbound in time", func(t *testing.T) {
		s := start(t, testOptions(t))
		ctx, cancel := context.WithCancel(context.Background())
		stop := s.Bind(ctx)
		if _, err := s.Call("echo", nil, nil); err != nil {
			t.Fatal(err)
		}
		if !stop() {
			t.Fatal("stop says the bound context had already ended")
		}
		cancel()
		if _, err := s.Call("echo", nil, nil); err != nil {
			t.Fatalf("after unbinding, cancelling the context broke the session: %v", err)
		}
	})
	for _, tc := range []struct {
		name string
		kind Kind
		want error
	}{
		{"deadline", KindTimedOut, context.DeadlineExceeded},
		{"cancel", KindCancelled, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(t)
			s := start(t, opts)
			pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
			limit := 3 * time.Second
			if tc.kind == KindCancelled {
				limit = 2 * time.Minute // the cancel, not the deadline, must end it
			}
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			defer cancel()
			defer s.Bind(ctx)()
			if tc.kind == KindCancelled {
				go func() {
					for ctx.Err() == nil {
						if _, err := os.Stat(pidFile); err == nil {
							cancel()
							return
						}
						time.Sleep(20 * time.Millisecond)
					}
				}()
			}
			_, err := s.Call("spawn_and_sleep", map[string]string{"pid_file": pidFile}, nil)
			var we *Error
			if !errors.As(err, &we) || we.Kind != tc.kind || !errors.Is(err, tc.want) || we.Op != "spawn_and_sleep" {
				t.Fatalf("error %v (%+v), want kind %v wrapping %v in op spawn_and_sleep", err, we, tc.kind, tc.want)
			}
			waitGone(t, pidFile)
			if _, again := s.Call("echo", nil, nil); !errors.Is(again, tc.want) {
				t.Errorf("the next call: %v, want the same end (%v)", again, tc.want)
			}
		})
	}
}
