package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"phase0/internal/testenv"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
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
		pyshim, err := filepath.Abs("../pyshim") // for the shim's side of _phase0_reuse
		if err != nil {
			shared.err = err
			return
		}
		shared.it, shared.err = Start(Options{Executable: py, ExtraPath: []string{testdata, pyshim}})
	})
	if shared.err != nil {
		tb.Fatalf("Start: %v", shared.err)
	}
	return shared.it
}

// Environment the tests run Python under: a PYTHONPATH folder holding a
// module isolation must hide, and a PYTHONHOME that would break the start.
const (
	probeModule = "p0_pythonpath_probe"
	envChild    = "PHASE0_BRIDGE_TEST_START" // child mode: Start this python, print the error
)

var pythonPathDir string

func TestMain(m *testing.M) {
	if py := os.Getenv(envChild); py != "" {
		os.Exit(startChild(py))
	}
	dir, err := os.MkdirTemp("", "p0-pythonpath-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pythonPathDir = dir
	if err := os.WriteFile(filepath.Join(dir, probeModule+".py"), []byte("LEAKED = True\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("PYTHONPATH", dir)
	os.Setenv("PYTHONHOME", filepath.Join(dir, "no-such-home"))

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
	os.RemoveAll(dir)
	os.Exit(code)
}

// startChild runs Start in a process of its own, for failures that happen
// after libpython is loaded (which would spoil the test process).
func startChild(py string) int {
	it, err := Start(Options{Executable: py})
	if err != nil {
		fmt.Println("start error:", err)
		return 0
	}
	fmt.Println("started:", it.Prefix())
	return 1
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

// fakePython writes a script that answers Inspect's query with info.
func fakePython(t *testing.T, path string, info map[string]any) string {
	t.Helper()
	line, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	writeExecutable(t, path, "#!/bin/sh\ncat <<'EOF'\n"+infoMarker+string(line)+"\nEOF\n")
	return path
}

func cpythonInfo(version []int, libdir string) map[string]any {
	return map[string]any{
		"version": version, "implementation": "cpython", "executable": "/opt/py/bin/python3", "prefix": "/opt/py", "base_prefix": "/opt/py",
		"libdir": libdir, "ldlibrary": fmt.Sprintf("libpython%d.%d.so", version[0], version[1]),
		"instsoname": fmt.Sprintf("libpython%d.%d.so.1.0", version[0], version[1]),
		"multiarch":  nil, "gil_disabled": 0, "trace_refs": nil,
	}
}

func TestStartRefusesBadPython(t *testing.T) {
	dir := t.TempDir()
	py2Banner := filepath.Join(dir, "banner", "python")
	writeExecutable(t, py2Banner, "#!/bin/sh\necho 'Python 2.7.18'\n")
	chatty := filepath.Join(dir, "chatty", "python")
	writeExecutable(t, chatty, "#!/bin/sh\nyes phase0\n")

	static := cpythonInfo([]int{3, 12, 1}, dir)
	static["ldlibrary"], static["instsoname"] = "libpython3.12.a", nil
	freeThreaded := cpythonInfo([]int{3, 13, 0}, dir)
	freeThreaded["gil_disabled"] = 1
	pypy := cpythonInfo([]int{3, 10, 14}, dir)
	pypy["implementation"] = "pypy"
	py315 := cpythonInfo([]int{3, 15, 0}, dir)

	type row struct {
		name        string
		exe         string
		unsupported bool // wraps ErrUnsupportedPython
		want        []string
	}
	tests := []row{
		{"not a python: /bin/true", "/bin/true", true, []string{"/bin/true is not a Python interpreter", "it answered nothing"}},
		{"not a python: /bin/false", "/bin/false", true, []string{"/bin/false is not a working Python interpreter", "exit status 1"}},
		{"python 2 wrapper", py2Banner, true, []string{py2Banner, "says it is Python 2.7.18", "3.10 to 3.14"}},
		{"endless output", chatty, true, []string{chatty, "printed more than"}},
		{"static only", fakePython(t, filepath.Join(dir, "static", "python3"), static), true,
			[]string{"static/python3 (Python 3.12.1) has no shared libpython", "LDLIBRARY is libpython3.12.a", "--enable-shared"}},
		{"free-threaded", fakePython(t, filepath.Join(dir, "ft", "python3"), freeThreaded), true, []string{"free-threaded build of Python 3.13.0"}},
		{"pypy", fakePython(t, filepath.Join(dir, "pypy", "python3"), pypy), true, []string{"is pypy 3.10.14, not CPython"}},
		{"too new", fakePython(t, filepath.Join(dir, "new", "python3"), py315), true, []string{"is Python 3.15.0; phase0 needs CPython 3.10 to 3.14"}},
		{"relative path", "bin/python", false, []string{`"bin/python" is not an absolute path`}},
		{"missing", filepath.Join(dir, "nope", "python"), false, []string{"no such file"}},
		{"directory", dir, false, []string{"is a directory"}},
	}
	// Real old interpreters, where pyenv has them.
	home, _ := os.UserHomeDir()
	for _, v := range []string{"2.7.18", "3.9.18"} {
		py := filepath.Join(home, ".pyenv", "versions", v, "bin", "python")
		if _, err := os.Stat(py); err != nil {
			t.Logf("no %s: the real Python %s row is not run", py, v)
			continue
		}
		tests = append(tests, row{"real python " + v, py, true, []string{py + " is Python " + v + "; phase0 needs CPython 3.10 to 3.14"}})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			it, err := Start(Options{Executable: tc.exe})
			if err == nil {
				t.Fatalf("Start(%s) succeeded (prefix %s), want an error", tc.exe, it.Prefix())
			}
			t.Log(err)
			if errors.Is(err, ErrAlreadyStarted) {
				t.Fatalf("Start(%s): %v; a refused python must not use up the process's one start", tc.exe, err)
			}
			if tc.unsupported != errors.Is(err, ErrUnsupportedPython) {
				t.Errorf("errors.Is(%v, ErrUnsupportedPython) = %v, want %v", err, !tc.unsupported, tc.unsupported)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestInspectTimeout(t *testing.T) {
	slow := filepath.Join(t.TempDir(), "python")
	writeExecutable(t, slow, "#!/bin/sh\nexec sleep 30\n")
	defer func(d time.Duration) { inspectTimeout = d }(inspectTimeout)
	inspectTimeout = 300 * time.Millisecond
	start := time.Now()
	_, err := Inspect(slow)
	if err == nil || !strings.Contains(err.Error(), "did not describe itself within 300ms") {
		t.Fatalf("Inspect(sleeper) = %v, want a timeout error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Inspect took %s to give up", d)
	}
}

// A libpython of another version where sysconfig says this one is: refused
// after dlopen, so in a child process.
func TestStartRefusesWrongLibrary(t *testing.T) {
	real, err := Inspect(testenv.Python(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	other := []int{3, real.Minor - 1, 0}
	if real.Minor == minMinor {
		other[1] = real.Minor + 1
	}
	name := fmt.Sprintf("libpython3.%d.so.1.0", other[1])
	if err := os.Symlink(real.Library, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	fake := fakePython(t, filepath.Join(dir, "bin", "python3"), cpythonInfo(other, dir))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+fake)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	want := fmt.Sprintf("python %s: %s is Python %d.%d.", fake, filepath.Join(dir, name), real.Major, real.Minor)
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), fmt.Sprintf("want 3.%d.*", other[1])) {
		t.Errorf("child output %q, want the version mismatch %q", out, want)
	}
}

func TestInterpreterUsesVenv(t *testing.T) {
	it := interp(t)
	py := testenv.Python(t)
	out, floats, err := it.Call("p0bridge", "interpreter", []byte(`{"probe": "`+probeModule+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	if floats != nil {
		t.Errorf("floats = %v, want nil for a str result", floats)
	}
	var info struct {
		Version            []int
		ProbeFound         bool `json:"probe_found"`
		Prefix, BasePrefix string
		Executable         string
		Isolated           int
		UTF8Mode           int `json:"utf8_mode"`
		Encodings          []string
		Path               []string
	}
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("result %s: %v", out, err)
	}
	venv := filepath.Dir(filepath.Dir(py))
	if !samePath(info.Prefix, venv) {
		t.Errorf("sys.prefix = %s, want the venv %s", info.Prefix, venv)
	}
	if it.Prefix() != info.Prefix {
		t.Errorf("Prefix() = %s, sys.prefix = %s", it.Prefix(), info.Prefix)
	}
	if info.Executable != py {
		t.Errorf("sys.executable = %s, want %s", info.Executable, py)
	}
	// The version the venv was made with, read from the file CPython reads.
	cfg, err := os.ReadFile(filepath.Join(venv, "pyvenv.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%d.%d.%d", info.Version[0], info.Version[1], info.Version[2])
	if m := regexp.MustCompile(`(?m)^version(_info)?\s*=\s*(\d+\.\d+\.\d+)`).FindSubmatch(cfg); m == nil || string(m[2]) != got {
		t.Errorf("sys.version_info = %s, pyvenv.cfg says %q", got, m)
	}
	t.Logf("embedded python %s from %s", got, venv)
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
	if info.ProbeFound || slices.Contains(info.Path, pythonPathDir) {
		t.Errorf("PYTHONPATH=%s reached the interpreter (sys.path %v, %s importable: %v)", pythonPathDir, info.Path, probeModule, info.ProbeFound)
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

// perPython are the tests TestEveryPython runs again in a child process per
// interpreter: CPython starts once per process, and one process can hold
// only one libpython.
var perPython = []string{"TestInterpreterUsesVenv", "TestStartTwice", "TestCallEcho", "TestCallFloatsBitExact", "TestCallErrors"}

// TestEveryPython runs the bridge in every interpreter make test prepared
// ($PHASE0_TEST_PYTHONS, else the Makefile's list: small NumPy venvs of other
// Python minors), with this one test binary.
func TestEveryPython(t *testing.T) {
	pys := testenv.Pythons(t)
	minors := map[string]bool{}
	for _, py := range pys {
		p, err := Inspect(py)
		if err != nil {
			t.Fatal(err)
		}
		minors[fmt.Sprintf("%d.%d", p.Major, p.Minor)] = true
	}
	if _, set := os.LookupEnv("PHASE0_TEST_PYTHONS"); set && len(minors) < 3 {
		t.Errorf("PHASE0_TEST_PYTHONS and PHASE0_PYTHON give Python minors %v, want at least 3", slices.Sorted(maps.Keys(minors)))
	}
	if len(pys) == 1 {
		t.Skip("no other Python minor (PHASE0_TEST_PYTHONS, else those `make pyvenvs` installed): only the default python is tested (in this process)")
	}
	for _, py := range pys[1:] {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(py))), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^("+strings.Join(perPython, "|")+")$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), "PHASE0_PYTHON="+py)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("bridge tests with %s: %v\n%s", py, err, out)
			}
			for _, name := range perPython {
				if !strings.Contains(string(out), "--- PASS: "+name+" ") {
					t.Errorf("%s did not pass with %s:\n%s", name, py, out)
				}
			}
			if m := regexp.MustCompile(`embedded python \S+ from \S+`).Find(out); m != nil {
				t.Log(string(m))
			}
		})
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

// TestReuseAllocator runs NumPy under the bridge's _phase0_reuse through the
// shim's heap.reusing: freed blocks of one size come back (counted), a
// reused block under np.zeros reads zeros, the cache keeps at most its cap
// and age() drops what was not freed again, and NumPy's own allocator is
// back after the block while an array made inside is still freed safely.
func TestReuseAllocator(t *testing.T) {
	it := interp(t)
	const n = 2 << 20 // float32 elements: 8 MiB arrays
	out, _, err := it.Call("p0bridge", "reuse", []byte(fmt.Sprintf(`{"n":%d}`, n)))
	if err != nil {
		t.Fatalf("reuse: %v", err)
	}
	var got struct {
		OutsideBefore      string  `json:"outside_before"`
		Inside             string  `json:"inside"`
		Active             bool    `json:"active"`
		ZerosSum           float64 `json:"zeros_sum"`
		HeldAfterFive      int64   `json:"held_after_five"`
		HeldAfterAge       int64   `json:"held_after_age"`
		HeldAfterSecondAge int64   `json:"held_after_second_age"`
		HeldBeforeStop     int64   `json:"held_before_stop"`
		HeldAfterStop      int64   `json:"held_after_stop"`
		ArrayHandler       string  `json:"array_handler"`
		Hits               int64   `json:"hits"`
		Misses             int64   `json:"misses"`
		Reused             int64   `json:"reused"`
		Fresh              int64   `json:"fresh"`
		HeldAfter          int64   `json:"held_after"`
		OutsideAfter       string  `json:"outside_after"`
		SurvivorSum        float64 `json:"survivor_sum"`
		AfterFree          string  `json:"after_free"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("reuse returned %s: %v", out, err)
	}
	const block = n * 4
	if got.OutsideBefore != "default_allocator" || got.Inside != "phase0_reuse" || !got.Active {
		t.Errorf("handler before %q, inside %q (active %v); want default_allocator, phase0_reuse, true", got.OutsideBefore, got.Inside, got.Active)
	}
	if got.ZerosSum != 0 {
		t.Errorf("np.zeros on a reused block sums to %v, want 0 (the block held 7.0s)", got.ZerosSum)
	}
	// The five fulls: one fresh block, four reused; zeros reuses it again;
	// the survivor is fresh; of the five ones, one takes zeros' block and
	// four are fresh; the two made before stop are fresh (the cache was
	// emptied by the second age) and kept when freed.
	if got.Hits != 6 || got.Misses != 8 || got.Reused != 6*block {
		t.Errorf("hits %d (%d bytes), misses %d; want 6 (%d bytes), 8", got.Hits, got.Reused, got.Misses, 6*block)
	}
	if got.HeldBeforeStop != 2*block || got.HeldAfterStop != 0 {
		t.Errorf("held before stop %d, after stop and a free %d; want %d, 0", got.HeldBeforeStop, got.HeldAfterStop, 2*block)
	}
	if got.Fresh != got.Misses*block {
		t.Errorf("misses %d, %d fresh bytes: only blocks of %d bytes count", got.Misses, got.Fresh, block)
	}
	if got.HeldAfterFive != 3*block || got.HeldAfterAge != 3*block || got.HeldAfterSecondAge != 0 || got.HeldAfter != 0 {
		t.Errorf("held after five frees %d, after age %d, after a second age %d, after the block %d; want %d, %d, 0, 0",
			got.HeldAfterFive, got.HeldAfterAge, got.HeldAfterSecondAge, got.HeldAfter, 3*block, 3*block)
	}
	if got.ArrayHandler != "phase0_reuse" || got.OutsideAfter != "default_allocator" || got.AfterFree != "default_allocator" {
		t.Errorf("array made inside: %q; after the block: %q, %q; want phase0_reuse, default_allocator, default_allocator",
			got.ArrayHandler, got.OutsideAfter, got.AfterFree)
	}
	if got.SurvivorSum != n {
		t.Errorf("an array made inside sums to %v after the block, want %d", got.SurvivorSum, n)
	}
}

// TestReuseArena runs the allocator's arena through heap.reusing under the
// bridge: a block the cache cannot hold is kept and later arrays (one from
// another thread through carving()) are carved out of it, np.zeros on a
// piece over old values reads zeros, resize moves a piece out with its
// values, and pieces outlive the arena, their block freed with the last.
func TestReuseArena(t *testing.T) {
	it := interp(t)
	const n = 2 << 20 // float32 elements: 8 MiB pieces out of a 48 MiB block
	out, _, err := it.Call("p0bridge", "arena", []byte(fmt.Sprintf(`{"n":%d}`, n)))
	if err != nil {
		t.Fatalf("arena: %v", err)
	}
	var got struct {
		StateKept   [4]int64  `json:"state_kept"`
		Carved      []bool    `json:"carved"`
		ZerosSum    float64   `json:"zeros_sum"`
		StateThree  [4]int64  `json:"state_three"`
		MovedOut    bool      `json:"moved_out"`
		MovedSum    float64   `json:"moved_sum"`
		StateMoved  [4]int64  `json:"state_moved"`
		OtherThread []bool    `json:"other_thread"`
		RolledBack  [4]int64  `json:"state_rolled_back"`
		AgainThere  bool      `json:"carved_again_there"`
		CarvedBytes int64     `json:"carved_bytes"`
		StateClosed [4]int64  `json:"state_closed"`
		SumsAfter   []float64 `json:"sums_after"`
		StateFreed  [4]int64  `json:"state_freed"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("arena returned %s: %v", out, err)
	}
	const piece, head = n * 4, 64 // a piece's bytes, and the bytes before it
	// arena_state: (blocks, room left under the cap, bytes carved, live pieces).
	if got.StateKept != [4]int64{1, 0, 0, 0} {
		t.Errorf("after the 48 MiB block was freed: arena %v, want one block, no room left, nothing carved", got.StateKept)
	}
	if fmt.Sprint(got.Carved) != "[true true true]" || got.ZerosSum != 0 {
		t.Errorf("carved from the block: %v (want all three), np.zeros there sums to %v (want 0, the block held 5.0s)", got.Carved, got.ZerosSum)
	}
	if got.StateThree != [4]int64{1, 0, 3 * (piece + head), 3} {
		t.Errorf("three pieces: arena %v, want [1 0 %d 3]", got.StateThree, 3*(piece+head))
	}
	if !got.MovedOut || got.MovedSum != n {
		t.Errorf("resize of a piece: moved out %v, its first %d values sum to %v; want true, %d", got.MovedOut, n, got.MovedSum, n)
	}
	// The moved piece was in the middle: its pages given back, the end stays.
	if got.StateMoved != [4]int64{1, 0, 3 * (piece + head), 2} {
		t.Errorf("after the resize: arena %v, want [1 0 %d 2]", got.StateMoved, 3*(piece+head))
	}
	if fmt.Sprint(got.OtherThread) != "[true]" {
		t.Errorf("an array made on another thread under carving(): carved and intact %v, want [true]", got.OtherThread)
	}
	// The thread's piece, the last carved, freed: the block's end moves back
	// over it, and the next array of its size is carved where it was.
	if got.RolledBack != [4]int64{1, 0, 3 * (piece + head), 2} || !got.AgainThere {
		t.Errorf("the last piece freed: arena %v (want [1 0 %d 2]), carved again at its place %v (want true)", got.RolledBack, 3*(piece+head), got.AgainThere)
	}
	if got.CarvedBytes != 3*piece+2*(piece/2*3) {
		t.Errorf("carved bytes %d, want %d", got.CarvedBytes, 3*piece+2*(piece/2*3))
	}
	// Closed: the cached zeros piece released; the 0.0s and the 3.0s live on.
	if got.StateClosed[0] != 1 || got.StateClosed[3] != 2 {
		t.Errorf("after the block: arena %v, want one closed block with two live pieces", got.StateClosed)
	}
	if fmt.Sprint(got.SumsAfter) != fmt.Sprint([]float64{0, 3.0 * n / 2 * 3}) {
		t.Errorf("pieces after the arena closed sum to %v, want [0 %v]", got.SumsAfter, 3.0*n/2*3)
	}
	if got.StateFreed != [4]int64{0, 0, 0, 0} {
		t.Errorf("after the last piece was freed: arena %v, want empty", got.StateFreed)
	}
}
