package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"phase0/internal/testenv"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// CPython starts once per process, so every test shares one interpreter.
var shared struct {
	once sync.Once
	it   *Interp
	err  error
}

func interp(tb testing.TB) *Interp {
	tb.Helper()
	py := testenv.Python(tb)
	shared.once.Do(func() {
		testdata, err := filepath.Abs("testdata")
		if err != nil {
			shared.err = err
			return
		}
		shared.it, shared.err = Start(Options{Executable: py, ExtraPath: []string{testdata}})
	})
	if shared.err != nil {
		tb.Fatalf("Start: %v", shared.err)
	}
	return shared.it
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.it != nil {
		if err := shared.it.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "Close: %v\n", err)
			code = 1
		}
		if _, _, err := shared.it.Call("p0bridge", "echo", []byte("{}")); !errors.Is(err, ErrClosed) {
			fmt.Fprintf(os.Stderr, "Call after Close: got %v, want ErrClosed\n", err)
			code = 1
		}
		if err := shared.it.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "second Close: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func TestLinkedVersion(t *testing.T) {
	if v := LinkedVersion(); !regexp.MustCompile(`^3\.\d+$`).MatchString(v) {
		t.Fatalf("LinkedVersion() = %q, want 3.N", v)
	}
}

func otherVersion(t *testing.T) string {
	var major, minor int
	if _, err := fmt.Sscanf(LinkedVersion(), "%d.%d", &major, &minor); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d.%d", major, minor-1)
}

func writeExecutable(t *testing.T, path, script string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestStartRefusesBadPython(t *testing.T) {
	other := otherVersion(t)
	dir := t.TempDir()

	plain := filepath.Join(dir, "plain", "python3")
	writeExecutable(t, plain, "#!/bin/sh\necho "+other+"\n")

	venv := filepath.Join(dir, "venv")
	venvPy := filepath.Join(venv, "bin", "python")
	writeExecutable(t, venvPy, "#!/bin/sh\nexit 1\n")
	cfg := "home = /usr/bin\ninclude-system-site-packages = false\nversion = " + other + ".4\n"
	if err := os.WriteFile(filepath.Join(venv, "pyvenv.cfg"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		exe      string
		sentinel error
		want     []string
	}{
		{"python reports another minor", plain, ErrVersionMismatch,
			[]string{plain, "is python " + other, "libpython " + LinkedVersion()}},
		{"venv built from another minor", venvPy, ErrVersionMismatch,
			[]string{venvPy, "is python " + other, filepath.Join(venv, "pyvenv.cfg"), "libpython " + LinkedVersion()}},
		{"relative path", "bin/python", nil, []string{`"bin/python" is not an absolute path`}},
		{"missing", filepath.Join(dir, "nope", "python"), nil, []string{"no such file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			it, err := Start(Options{Executable: tc.exe})
			if err == nil {
				t.Fatalf("Start(%s) succeeded (prefix %s), want an error", tc.exe, it.Prefix())
			}
			if tc.sentinel != nil && !errors.Is(err, tc.sentinel) {
				t.Errorf("error %v does not wrap %v", err, tc.sentinel)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestInterpreterUsesVenv(t *testing.T) {
	it := interp(t)
	out, floats, err := it.Call("p0bridge", "interpreter", []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	if floats != nil {
		t.Errorf("floats = %v, want nil for a str result", floats)
	}
	var info struct {
		Prefix, BasePrefix string
		Isolated           int
		UTF8Mode           int `json:"utf8_mode"`
		Encodings          []string
		Path               []string
	}
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("result %s: %v", out, err)
	}
	venv := filepath.Dir(filepath.Dir(testenv.Python(t)))
	if !samePath(info.Prefix, venv) {
		t.Errorf("sys.prefix = %s, want the venv %s", info.Prefix, venv)
	}
	if it.Prefix() != info.Prefix {
		t.Errorf("Prefix() = %s, sys.prefix = %s", it.Prefix(), info.Prefix)
	}
	if info.Isolated != 1 {
		t.Errorf("sys.flags.isolated = %d, want 1", info.Isolated)
	}
	if info.UTF8Mode != 1 || strings.Join(info.Encodings, ",") != "utf-8,utf-8,utf-8" {
		t.Errorf("utf8_mode %d, encodings (fs, stdout, stderr) %v, want UTF-8 mode everywhere", info.UTF8Mode, info.Encodings)
	}
	testdata, _ := filepath.Abs("testdata")
	if len(info.Path) == 0 || info.Path[0] != testdata {
		t.Errorf("sys.path = %v, want %s first", info.Path, testdata)
	}
	sitePackages := false
	for _, p := range info.Path {
		if strings.HasPrefix(p, info.Prefix) && strings.HasSuffix(p, "site-packages") {
			sitePackages = true
		}
	}
	if !sitePackages {
		t.Errorf("sys.path = %v has no site-packages inside the venv", info.Path)
	}
}

func TestStartTwice(t *testing.T) {
	interp(t)
	_, err := Start(Options{Executable: testenv.Python(t)})
	if !errors.Is(err, ErrAlreadyStarted) {
		t.Fatalf("second Start: got %v, want ErrAlreadyStarted", err)
	}
}

func TestCallEcho(t *testing.T) {
	it := interp(t)
	tests := []struct{ arg, want string }{
		{`{"a": [1, 2.5, "x"]}`, `{"echo": {"a": [1, 2.5, "x"]}}`},
		{`"ünïcødé ✓"`, `{"echo": "\u00fcn\u00efc\u00f8d\u00e9 \u2713"}`},
		{`null`, `{"echo": null}`},
	}
	for _, tc := range tests {
		out, _, err := it.Call("p0bridge", "echo", []byte(tc.arg))
		if err != nil {
			t.Fatalf("echo(%s): %v", tc.arg, err)
		}
		if string(out) != tc.want {
			t.Errorf("echo(%s) = %s, want %s", tc.arg, out, tc.want)
		}
	}
}

// bitPattern mirrors p0bridge.bit_pattern.
func bitPattern(n int) []uint32 {
	bits := make([]uint32, n)
	for i := range bits {
		bits[i] = uint32(i) * 2654435761
	}
	return bits
}

func TestCallFloatsBitExact(t *testing.T) {
	it := interp(t)
	for _, n := range []int{0, 1, 1000, 151936} {
		out, floats, err := it.Call("p0bridge", "bit_pattern", []byte(fmt.Sprintf(`{"n": %d}`, n)))
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != fmt.Sprintf(`{"n": %d}`, n) {
			t.Errorf("json = %s", out)
		}
		if floats == nil || len(floats) != n {
			t.Fatalf("n=%d: got %d floats (nil=%v)", n, len(floats), floats == nil)
		}
		for i, want := range bitPattern(n) {
			if got := math.Float32bits(floats[i]); got != want {
				t.Fatalf("n=%d: float %d has bits %#08x, want %#08x", n, i, got, want)
			}
		}
	}
}

func TestCallErrors(t *testing.T) {
	it := interp(t)
	tests := []struct {
		fn, module string
		pyType     string   // want *PyError of this type, or
		result     bool     // want ErrResult
		want       []string // substrings of Message (PyError) or Error() (ErrResult)
		traceback  []string
	}{
		{fn: "raise_value_error", pyType: "ValueError", want: []string{"bad value 7"},
			traceback: []string{"Traceback (most recent call last)", "in inner", `raise ValueError(f"bad value {value}")`, "ValueError: bad value 7"}},
		{fn: "raise_custom", pyType: "p0bridge.ShimError", want: []string{"custom failure"}},
		{fn: "system_exit", pyType: "SystemExit", want: []string{"4"}},
		{fn: "no_such_function", pyType: "AttributeError", want: []string{"no_such_function"}},
		{fn: "echo", module: "no_such_module", pyType: "ModuleNotFoundError", want: []string{"no_such_module"}},
		{fn: "float64_array", result: true, want: []string{`format "d"`, "itemsize 8", "want float32"}},
		{fn: "strided_array", result: true, want: []string{"C-contiguous"}},
		{fn: "not_a_buffer", result: true, want: []string{"p0bridge.not_a_buffer returned a list", "buffer"}},
		{fn: "wrong_type", result: true, want: []string{"p0bridge.wrong_type returned int, want str"}},
		{fn: "not_callable", result: true, want: []string{"p0bridge.not_callable is a int, not a function"}},
	}
	for _, tc := range tests {
		t.Run(tc.fn, func(t *testing.T) {
			module := tc.module
			if module == "" {
				module = "p0bridge"
			}
			out, floats, err := it.Call(module, tc.fn, []byte("{}"))
			if err == nil {
				t.Fatalf("got %s, %d floats, want an error", out, len(floats))
			}
			var pe *PyError
			switch {
			case tc.result:
				if !errors.Is(err, ErrResult) {
					t.Fatalf("error %v does not wrap ErrResult", err)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
			case errors.As(err, &pe):
				if pe.Type != tc.pyType {
					t.Errorf("Type = %q, want %q", pe.Type, tc.pyType)
				}
				for _, w := range tc.want {
					if !strings.Contains(pe.Message, w) {
						t.Errorf("Message %q does not mention %q", pe.Message, w)
					}
				}
				for _, w := range tc.traceback {
					if !strings.Contains(pe.Traceback, w) {
						t.Errorf("Traceback does not contain %q:\n%s", w, pe.Traceback)
					}
				}
			default:
				t.Fatalf("error %v (%T), want *PyError %s", err, err, tc.pyType)
			}
			// The interpreter stays usable after every kind of failure.
			if _, _, err := it.Call("p0bridge", "echo", []byte("1")); err != nil {
				t.Fatalf("echo after %s: %v", tc.fn, err)
			}
		})
	}
}

func TestImportTorch(t *testing.T) {
	it := interp(t)
	out, _, err := it.Call("p0bridge", "torch_info", []byte("{}"))
	if err != nil {
		t.Fatalf("import torch through the bridge: %v", err)
	}
	var info struct {
		Version string
		Sum     float64
		File    string
	}
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatal(err)
	}
	if info.Sum != 6 || info.Version == "" {
		t.Errorf("torch_info = %+v, want version and sum 6", info)
	}
	if !strings.HasPrefix(info.File, it.Prefix()) {
		t.Errorf("torch imported from %s, outside the venv %s", info.File, it.Prefix())
	}
}

func BenchmarkCallLogits(b *testing.B) {
	it := interp(b)
	const vocab = 151936
	arg := []byte(fmt.Sprintf(`{"n": %d}`, vocab))
	b.SetBytes(vocab * 4)
	for b.Loop() {
		_, floats, err := it.Call("p0bridge", "logits", arg)
		if err != nil {
			b.Fatal(err)
		}
		if len(floats) != vocab {
			b.Fatalf("got %d floats", len(floats))
		}
	}
}
