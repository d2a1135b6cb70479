package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Supported CPython minors. 3.10 is the oldest the llms tree's code runs on;
// 3.14 is the newest whose libpython still has the initialization API the
// bridge uses (see bridge.c), which is scheduled for removal in 3.15.
const (
	minMinor = 10
	maxMinor = 14
)

// ErrUnsupportedPython is wrapped by every error that says the given
// interpreter cannot be embedded (not a Python, Python 2, too old or too new,
// no shared libpython, a free-threaded build).
var ErrUnsupportedPython = errors.New("bridge: unsupported python")

// Python is what Inspect learned by running an interpreter.
type Python struct {
	Executable string // the path Inspect was given
	Program    string // sys.executable as the interpreter reports it: the program name Start gives the embedded one
	Version    string // "3.12.1"
	Major      int
	Minor      int
	Prefix     string // sys.prefix: the venv directory for a venv's python
	BasePrefix string // sys.base_prefix: the installation the venv was made from
	Library    string // the shared libpython Start loads
}

// Venv reports whether the interpreter belongs to a virtual environment.
func (p Python) Venv() bool { return p.Prefix != p.BasePrefix }

// How long, and how much output, an interpreter gets to describe itself.
// Starting a venv's python imports site and its .pth files: well under a
// second, but a cold disk or a loaded machine can stretch it.
var inspectTimeout = 30 * time.Second

const inspectMaxOut = 64 << 10

// infoMarker prefixes the line inspectScript prints, so output from a
// sitecustomize or a .pth file cannot be mistaken for the answer.
const infoMarker = "phase0-python-info "

// inspectScript runs under Python 2 as well, so that a Python 2 is named as
// such instead of failing on syntax.
const inspectScript = `import sys, json
try:
    import sysconfig
    v = sysconfig.get_config_var
except ImportError:
    v = lambda name: None
impl = getattr(sys, "implementation", None)
sys.stdout.write("` + infoMarker + `" + json.dumps({
    "version": list(sys.version_info[:3]),
    "implementation": impl.name if impl is not None else None,
    "executable": sys.executable,
    "prefix": sys.prefix,
    "base_prefix": getattr(sys, "base_prefix", sys.prefix),
    "libdir": v("LIBDIR"),
    "ldlibrary": v("LDLIBRARY"),
    "instsoname": v("INSTSONAME"),
    "multiarch": v("MULTIARCH"),
    "gil_disabled": v("Py_GIL_DISABLED"),
    "trace_refs": v("Py_TRACE_REFS"),
}) + "\n")
`

// rawInfo is inspectScript's answer; sysconfig values may be null or, in
// old or unusual builds, numbers where strings are expected.
type rawInfo struct {
	Version        []int  `json:"version"`
	Implementation string `json:"implementation"`
	Executable     string `json:"executable"`
	Prefix         string `json:"prefix"`
	BasePrefix     string `json:"base_prefix"`
	LibDir         any    `json:"libdir"`
	LDLibrary      any    `json:"ldlibrary"`
	InstSoname     any    `json:"instsoname"`
	Multiarch      any    `json:"multiarch"`
	GILDisabled    any    `json:"gil_disabled"`
	TraceRefs      any    `json:"trace_refs"`
}

// Inspect runs exe (bounded in time and output) to learn its version,
// prefixes and shared libpython, and refuses an interpreter phase0 cannot
// embed with an error naming it and what is missing.
func Inspect(exe string) (Python, error) {
	if !filepath.IsAbs(exe) {
		return Python{}, fmt.Errorf("bridge: python executable %q is not an absolute path", exe)
	}
	st, err := os.Stat(exe)
	if err != nil {
		return Python{}, fmt.Errorf("bridge: python executable: %w", err)
	}
	if st.IsDir() {
		return Python{}, fmt.Errorf("bridge: python executable %s is a directory", exe)
	}
	out, err := runInspect(exe)
	if err != nil {
		return Python{}, err
	}
	raw, err := parseInfo(exe, out)
	if err != nil {
		return Python{}, err
	}
	return checkInfo(exe, raw)
}

func runInspect(exe string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), inspectTimeout)
	defer cancel()
	// -E and -s (not -I, which Python 2 rejects) keep PYTHON* variables and
	// the user's site-packages out, as the embedded interpreter will; site
	// itself must run, because before 3.11 it is what makes sys.prefix the venv.
	cmd := exec.CommandContext(ctx, exe, "-E", "-s", "-c", inspectScript)
	cmd.Dir = "/" // a stray sysconfig.py in the current directory must not answer
	cmd.Stdin = nil
	stdout := &capped{max: inspectMaxOut}
	stderr := &capped{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second // a grandchild holding the pipes must not hang us
	err := cmd.Run()
	switch {
	case stdout.truncated:
		return nil, fmt.Errorf("%w: %s printed more than %d bytes when asked for its version and libpython; it does not answer as a Python interpreter does",
			ErrUnsupportedPython, exe, inspectMaxOut)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%w: %s did not describe itself within %s", ErrUnsupportedPython, exe, inspectTimeout)
	case err != nil:
		return nil, fmt.Errorf("%w: %s is not a working Python interpreter: asked for its version and libpython, it failed: %w%s",
			ErrUnsupportedPython, exe, err, quoteTail(stderr.String()))
	}
	return stdout.buf.Bytes(), nil
}

func parseInfo(exe string, out []byte) (rawInfo, error) {
	var line []byte
	for l := range bytes.Lines(out) {
		if rest, ok := bytes.CutPrefix(l, []byte(infoMarker)); ok {
			line = rest
		}
	}
	if line == nil {
		if v := pythonBanner(out); v != "" {
			return rawInfo{}, fmt.Errorf("%w: %s says it is %s but did not run phase0's query; phase0 needs CPython 3.%d to 3.%d",
				ErrUnsupportedPython, exe, v, minMinor, maxMinor)
		}
		return rawInfo{}, fmt.Errorf("%w: %s is not a Python interpreter: asked for its version and libpython, it answered %s",
			ErrUnsupportedPython, exe, describeOutput(out))
	}
	var raw rawInfo
	if err := json.Unmarshal(line, &raw); err != nil {
		return rawInfo{}, fmt.Errorf("%w: %s answered with malformed information (%v): %.200q", ErrUnsupportedPython, exe, err, line)
	}
	if len(raw.Version) != 3 {
		return rawInfo{}, fmt.Errorf("%w: %s reported version %v, want [major, minor, micro]", ErrUnsupportedPython, exe, raw.Version)
	}
	return raw, nil
}

func checkInfo(exe string, raw rawInfo) (Python, error) {
	p := Python{
		Executable: exe,
		Program:    raw.Executable,
		Version:    fmt.Sprintf("%d.%d.%d", raw.Version[0], raw.Version[1], raw.Version[2]),
		Major:      raw.Version[0],
		Minor:      raw.Version[1],
		Prefix:     raw.Prefix,
		BasePrefix: raw.BasePrefix,
	}
	needs := fmt.Sprintf("phase0 needs CPython 3.%d to 3.%d", minMinor, maxMinor)
	switch {
	case raw.Implementation != "" && raw.Implementation != "cpython":
		return Python{}, fmt.Errorf("%w: %s is %s %s, not CPython; %s (it loads libpython)", ErrUnsupportedPython, exe, raw.Implementation, p.Version, needs)
	case p.Major != 3 || p.Minor < minMinor || p.Minor > maxMinor:
		return Python{}, fmt.Errorf("%w: %s is Python %s; %s", ErrUnsupportedPython, exe, p.Version, needs)
	case truthy(raw.GILDisabled):
		return Python{}, fmt.Errorf("%w: %s is a free-threaded build of Python %s (Py_GIL_DISABLED); %s in its default build, with the GIL",
			ErrUnsupportedPython, exe, p.Version, needs)
	case truthy(raw.TraceRefs):
		return Python{}, fmt.Errorf("%w: %s is a Py_TRACE_REFS build of Python %s, whose objects have another memory layout; %s without --with-trace-refs",
			ErrUnsupportedPython, exe, p.Version, needs)
	case p.Prefix == "" || p.BasePrefix == "" || !filepath.IsAbs(p.Program):
		return Python{}, fmt.Errorf("%w: %s (Python %s) reported no absolute sys.executable, sys.prefix or sys.base_prefix (%q, %q, %q)",
			ErrUnsupportedPython, exe, p.Version, p.Program, p.Prefix, p.BasePrefix)
	}
	lib, err := findLibpython(raw, p)
	if err != nil {
		return Python{}, err
	}
	p.Library = lib
	return p, nil
}

// findLibpython looks where the build put its shared library: LIBDIR (Debian
// and Ubuntu put it in LIBDIR's multiarch folder), under the soname first
// because that is the file the python binary itself was linked against.
func findLibpython(raw rawInfo, p Python) (string, error) {
	libdir, ldlibrary := str(raw.LibDir), str(raw.LDLibrary)
	short := fmt.Sprintf("libpython%d.%d", p.Major, p.Minor)
	names := []string{str(raw.InstSoname), short + ".so.1.0", short + ".so"}
	if strings.Contains(ldlibrary, ".so") {
		names = append(names, ldlibrary)
	}
	var dirs []string
	for _, d := range []string{libdir, filepath.Join(p.BasePrefix, "lib")} {
		if d == "" {
			continue
		}
		dirs = append(dirs, d)
		if ma := str(raw.Multiarch); ma != "" {
			dirs = append(dirs, filepath.Join(d, ma))
		}
	}
	for _, d := range dirs {
		for _, n := range names {
			if n == "" || !strings.Contains(n, ".so") {
				continue
			}
			path := filepath.Join(d, n)
			if st, err := os.Stat(path); err == nil && !st.IsDir() {
				return path, nil
			}
		}
	}
	what := "LDLIBRARY is " + quoteOrNone(ldlibrary)
	return "", fmt.Errorf("%w: %s (Python %s) has no shared libpython: %s and no %s.so* is in %s; "+
		"phase0 loads libpython at run time, so it needs a Python built with --enable-shared "+
		"(pyenv: PYTHON_CONFIGURE_OPTS=--enable-shared pyenv install %d.%d; Debian/Ubuntu: apt install libpython%d.%d)",
		ErrUnsupportedPython, p.Executable, p.Version, what, short, strings.Join(dedupe(dirs), " or "), p.Major, p.Minor, p.Major, p.Minor)
}

// pythonBanner finds "Python 2.7.18" in the output of something that ignored
// the query (a wrapper script, or a python that failed before running it).
func pythonBanner(out []byte) string {
	s := string(out)
	i := strings.Index(s, "Python ")
	if i < 0 {
		return ""
	}
	rest := s[i+len("Python "):]
	end := strings.IndexFunc(rest, func(r rune) bool { return !(r == '.' || r >= '0' && r <= '9') })
	if end < 0 {
		end = len(rest)
	}
	if end == 0 || !strings.Contains(rest[:end], ".") {
		return ""
	}
	return "Python " + rest[:end]
}

func describeOutput(out []byte) string {
	s := strings.TrimSpace(string(out))
	if s == "" {
		return "nothing (exit status 0)"
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return fmt.Sprintf("%q", s)
}

func quoteTail(stderr string) string {
	s := strings.TrimSpace(stderr)
	if s == "" {
		return ""
	}
	if len(s) > 500 {
		s = "…" + s[len(s)-500:]
	}
	return ": " + s
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func quoteOrNone(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}

// truthy reads a sysconfig flag, which is 1, 0, None or (rarely) a string.
func truthy(v any) bool {
	switch x := v.(type) {
	case float64:
		return x != 0
	case string:
		return x != "" && x != "0"
	case bool:
		return x
	}
	return false
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// capped keeps the first max bytes written to it. Past that it fails the
// write, which closes the pipe and so stops a writer that would not end.
type capped struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

var errOutputCap = errors.New("output cap reached")

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.truncated = true
		n, _ := c.buf.Write(p[:max(room, 0)])
		return n, errOutputCap
	}
	return c.buf.Write(p)
}

func (c *capped) String() string { return c.buf.String() }

func samePath(a, b string) bool {
	if a == b {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}
