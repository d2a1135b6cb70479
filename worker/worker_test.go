package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"phase0/internal/testenv"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const childEnv = "PHASE0_WORKER_TEST_CHILD"

// The test binary doubles as the worker executable: Run re-executes it with
// childEnv set, and TestMain hands over to Main.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(Main())
	}
	os.Exit(m.Run())
}

func testOptions(tb testing.TB) Options {
	tb.Helper()
	py := testenv.Python(tb)
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		tb.Fatal(err)
	}
	return Options{
		Python:    py,
		ExtraPath: []string{testdata},
		Env:       []string{childEnv + "=1"},
		Exe:       []string{exe},
		Timeout:   5 * time.Minute, // a safety net for a broken build, never reached when passing
	}
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

func TestRunEchoAndFloats(t *testing.T) {
	opts := testOptions(t)
	const n = 151936
	reqs := []Request{
		{Op: "echo", Args: json.RawMessage(`{"x": [1, "two"]}`)},
		{Op: "bit_pattern", Args: json.RawMessage(fmt.Sprintf(`{"n": %d}`, n))},
		{Op: "echo"},
		{Op: "bit_pattern", Args: json.RawMessage(`{"n": 0}`)},
	}
	resps, err := Run(context.Background(), opts, "p0test", reqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(resps) != len(reqs) {
		t.Fatalf("got %d responses for %d requests", len(resps), len(reqs))
	}
	// Results travel compacted inside the header frame.
	wantJSON := []string{`{"echo":{"x":[1,"two"]}}`, fmt.Sprintf(`{"n":%d}`, n), `{"echo":{}}`, `{"n":0}`}
	for i, w := range wantJSON {
		if string(resps[i].Result) != w {
			t.Errorf("response %d = %s, want %s", i, resps[i].Result, w)
		}
	}
	if resps[0].Floats != nil || resps[2].Floats != nil {
		t.Errorf("str-only ops returned floats")
	}
	if resps[3].Floats == nil || len(resps[3].Floats) != 0 {
		t.Errorf("empty array: got %v, want an empty non-nil slice", resps[3].Floats)
	}
	got := resps[1].Floats
	if len(got) != n {
		t.Fatalf("got %d floats, want %d", len(got), n)
	}
	for i := range got {
		if want := uint32(i) * 2654435761; math.Float32bits(got[i]) != want {
			t.Fatalf("float %d has bits %#08x, want %#08x", i, math.Float32bits(got[i]), want)
		}
	}
}

func TestRunOpError(t *testing.T) {
	opts := testOptions(t)
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
			reqs := []Request{{Op: "echo", Args: json.RawMessage(`1`)}, {Op: tc.op}, {Op: "echo"}}
			resps, err := Run(context.Background(), opts, "p0test", reqs)
			var oe *OpError
			if !errors.As(err, &oe) {
				t.Fatalf("error %v (%T), want *OpError", err, err)
			}
			if len(resps) != 1 || string(resps[0].Result) != `{"echo":1}` {
				t.Errorf("responses before the failure = %v, want the first echo", resps)
			}
			if oe.Op != tc.op || oe.Type != tc.typ || !strings.Contains(oe.Message, tc.message) {
				t.Errorf("OpError = {Op %q, Type %q, Message %q}, want {%q, %q, ~%q}", oe.Op, oe.Type, oe.Message, tc.op, tc.typ, tc.message)
			}
			if !strings.Contains(oe.Traceback, tc.traceback) {
				t.Errorf("Traceback does not contain %q:\n%s", tc.traceback, oe.Traceback)
			}
		})
	}
}

func TestRunNoisyOutput(t *testing.T) {
	opts := testOptions(t)
	var tee syncBuffer
	opts.Stderr = &tee
	const lines = 3000 // ~100 KiB of output, more than the kept tail
	reqs := []Request{
		{Op: "noisy", Args: json.RawMessage(fmt.Sprintf(`{"lines": %d}`, lines))},
		{Op: "bit_pattern", Args: json.RawMessage(`{"n": 4096}`)},
	}
	resps, err := Run(context.Background(), opts, "p0test", reqs)
	if err != nil {
		t.Fatal(err)
	}
	if string(resps[0].Result) != fmt.Sprintf(`{"lines":%d}`, lines) {
		t.Errorf("noisy returned %s", resps[0].Result)
	}
	for i, f := range resps[1].Floats {
		if want := uint32(i) * 2654435761; math.Float32bits(f) != want {
			t.Fatalf("float %d has bits %#08x after noisy output, want %#08x", i, math.Float32bits(f), want)
		}
	}
	out := tee.String()
	for _, w := range []string{"stdout line 0 ", fmt.Sprintf("stderr line %d", lines-1), "raw frame-like bytes on fd 1", "noisy: END MARKER"} {
		if !strings.Contains(out, w) {
			t.Errorf("teed output lacks %q", w)
		}
	}
}

func TestRunCrash(t *testing.T) {
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
			reqs := []Request{{Op: "echo"}, {Op: tc.op}, {Op: "echo"}}
			resps, err := Run(context.Background(), opts, "p0test", reqs)
			var ce *CrashError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T), want *CrashError", err, err)
			}
			if len(resps) != 1 {
				t.Errorf("got %d responses, want the 1 before the crash", len(resps))
			}
			if ce.Cause != tc.cause || ce.Op != tc.op {
				t.Errorf("CrashError{Op %q, Cause %q}, want {%q, %q}", ce.Op, ce.Cause, tc.op, tc.cause)
			}
			if !strings.Contains(ce.StderrTail, tc.announced) {
				t.Errorf("StderrTail lacks %q:\n%s", tc.announced, ce.StderrTail)
			}
			if !strings.Contains(err.Error(), tc.cause) || !strings.Contains(err.Error(), tc.announced) {
				t.Errorf("Error() = %q, want the cause and the last output", err)
			}
		})
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

func TestRunTimeoutKillsProcessGroup(t *testing.T) {
	opts := testOptions(t)
	opts.Timeout = 3 * time.Second
	pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
	args, _ := json.Marshal(map[string]string{"pid_file": pidFile})
	_, err := Run(context.Background(), opts, "p0test", []Request{{Op: "echo"}, {Op: "spawn_and_sleep", Args: args}})
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v (%T), want ErrTimeout and context.DeadlineExceeded", err, err)
	}
	var te *TimeoutError
	if !errors.As(err, &te) || te.Op != "spawn_and_sleep" || !strings.Contains(te.StderrTail, "about to sleep") {
		t.Errorf("TimeoutError = %+v, want op spawn_and_sleep and its output", te)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the op never recorded its grandchild (timeout too short for this machine?): %v", err)
	}
	pid, err := strconv.Atoi(string(data))
	if err != nil {
		t.Fatal(err)
	}
	// SIGKILL is delivered asynchronously; the kernel needs a moment to tear
	// the process down (and init to reap it).
	for i := 0; i < 100 && alive(pid); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(pid) {
		t.Fatalf("grandchild %d survived the timeout", pid)
	}
}

// TestRunEveryPython runs the worker (this one test binary) in every
// interpreter make test prepared: the default venv and $PHASE0_TEST_PYTHONS.
func TestRunEveryPython(t *testing.T) {
	base := testOptions(t)
	for _, py := range testenv.Pythons(t) {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(py))), func(t *testing.T) {
			opts := base
			opts.Python = py
			resps, err := Run(context.Background(), opts, "p0test", []Request{
				{Op: "echo", Args: json.RawMessage(`{"py": "` + py + `"}`)},
				{Op: "bit_pattern", Args: json.RawMessage(`{"n": 1000}`)},
			})
			if err != nil {
				t.Fatal(err)
			}
			var echo struct{ Echo struct{ Py string } }
			if len(resps) != 2 || json.Unmarshal(resps[0].Result, &echo) != nil || echo.Echo.Py != py {
				t.Fatalf("got %d responses, the first %s; want the echo of %s", len(resps), resps[0].Result, py)
			}
			if len(resps[1].Floats) != 1000 || math.Float32bits(resps[1].Floats[999]) != 999*2654435761%(1<<32) {
				t.Fatalf("bit_pattern returned %d floats, want 1000 with the bit pattern", len(resps[1].Floats))
			}
		})
	}
}

func TestRunCancelled(t *testing.T) {
	opts := testOptions(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, opts, "p0test", []Request{{Op: "echo"}})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Fatalf("error %v, want context.Canceled and not ErrTimeout", err)
	}
}

func TestRunStartError(t *testing.T) {
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
			_, err := Run(context.Background(), o, tc.module, []Request{{Op: "echo"}})
			if err == nil {
				t.Fatal("Run succeeded, want an error")
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
	opts := testOptions(b)
	const vocab = 151936
	reqs := make([]Request, b.N)
	for i := range reqs {
		reqs[i] = Request{Op: "logits", Args: json.RawMessage(fmt.Sprintf(`{"n": %d}`, vocab))}
	}
	b.SetBytes(vocab * 4)
	b.ResetTimer()
	resps, err := Run(context.Background(), opts, "p0test", reqs)
	if err != nil {
		b.Fatal(err)
	}
	if len(resps) != b.N || len(resps[0].Floats) != vocab {
		b.Fatalf("got %d responses", len(resps))
	}
}

// BenchmarkStartup is the fixed cost of one Run: fork, exec, Python start
// (the test module imports nothing heavy), one echo, finalize.
func BenchmarkStartup(b *testing.B) {
	opts := testOptions(b)
	for b.Loop() {
		if _, err := Run(context.Background(), opts, "p0test", []Request{{Op: "echo"}}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRunTorch(t *testing.T) {
	opts := testOptions(t)
	var out syncBuffer
	opts.Stderr = &out
	resps, err := Run(context.Background(), opts, "p0test", []Request{{Op: "torch_sum", Args: json.RawMessage(`{"n": 5}`)}})
	if err != nil {
		t.Fatalf("%v\noutput:\n%s", err, out.String())
	}
	var got struct {
		Torch string
		Sum   float64
	}
	if err := json.Unmarshal(resps[0].Result, &got); err != nil {
		t.Fatal(err)
	}
	if got.Torch == "" || got.Sum != 10 || len(resps[0].Floats) != 5 || resps[0].Floats[4] != 4 {
		t.Errorf("torch_sum = %s with floats %v, want sum 10 and 0..4", resps[0].Result, resps[0].Floats)
	}
	if s := out.String(); s != "" {
		t.Errorf("the child printed %q; finalizing torch should be quiet", s)
	}
}
