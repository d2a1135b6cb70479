// Package preflight tells the user whether this machine is ready for Phase 0
// and for the phases after it: NPU devices and XRT, memory and disk against
// what the model needs, the Python environment, a HuggingFace token, and the
// mlir-air llms tree. Each check is a verdict.Section; none of them runs
// Python (the caller passes the Python facts in) or touches the network.
package preflight

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"phase0/gate/verdict"
	"phase0/npu"
	"phase0/read/hfcache"
)

// Check is one preflight item: its name and its section.
type Check struct {
	Name string `json:"name"`
	verdict.Section
}

// Report is every check, plus the facts they were decided on. It is the
// `preflight` section of phase0's JSON report.
type Report struct {
	verdict.Section
	Checks        []Check      `json:"checks"`
	Devices       []npu.Device `json:"npu_devices"`
	XRTVersion    string       `json:"xrt_version,omitempty"`
	MemAvailable  int64        `json:"mem_available_bytes,omitempty"`
	DiskFree      int64        `json:"disk_free_bytes,omitempty"`
	Python        *PythonEnv   `json:"python,omitempty"`
	HFTokenSource string       `json:"hf_token_source,omitempty"` // where a token was found, never the token
	LLMsDir       string       `json:"llms_dir,omitempty"`
}

// PythonEnv is what the caller learned from the project's Python (through
// the bridge or a subprocess). Empty versions mean "not installed".
type PythonEnv struct {
	Executable   string `json:"executable"`
	Version      string `json:"version"`
	Torch        string `json:"torch"`
	Transformers string `json:"transformers"`
	Safetensors  string `json:"safetensors"`
	// Err is why the facts could not be gathered (no venv, import crash).
	Err string `json:"error,omitempty"`
}

// Input is what to check against. Zero values mean "not known": a zero need
// is reported, not judged; an empty LLMsDir is a warning.
type Input struct {
	LLMsDir  string
	NeedRAM  int64  // bytes the bf16 model run needs
	NeedDisk int64  // bytes the download and outputs need
	DiskPath string // where they go (default: the working directory)
	Python   *PythonEnv

	// Injected for tests; nil means the real thing.
	Getenv      func(string) string
	Devices     func() ([]npu.Device, error)
	XRTVersion  func() (string, error)
	MemInfoPath string                           // default /proc/meminfo
	DiskFreeAt  func(path string) (int64, error) // default statfs
	HomeDir     string                           // default os.UserHomeDir
}

func (in *Input) defaults() {
	if in.Getenv == nil {
		in.Getenv = os.Getenv
	}
	if in.Devices == nil {
		in.Devices = func() ([]npu.Device, error) { return npu.Devices() }
	}
	if in.XRTVersion == nil {
		in.XRTVersion = npu.XRTVersion
	}
	if in.MemInfoPath == "" {
		in.MemInfoPath = "/proc/meminfo"
	}
	if in.DiskFreeAt == nil {
		in.DiskFreeAt = statfsFree
	}
	if in.DiskPath == "" {
		in.DiskPath = "."
	}
	if in.HomeDir == "" {
		in.HomeDir, _ = os.UserHomeDir()
	}
}

// Run performs every check. It never fails as a whole: a check that cannot
// decide says so in its own section.
func Run(in Input) *Report {
	in.defaults()
	r := &Report{Section: verdict.NewSection(), Checks: []Check{}, Devices: []npu.Device{}, LLMsDir: in.LLMsDir}
	r.add("npu", r.checkNPU(in))
	r.add("xrt", r.checkXRT(in))
	r.add("memory", r.checkMemory(in))
	r.add("disk", r.checkDisk(in))
	r.add("python", r.checkPython(in))
	r.add("hf_token", r.checkToken(in))
	r.add("mlir_air_tree", checkTree(in.LLMsDir))

	counts := map[verdict.Status]int{}
	for _, c := range r.Checks {
		counts[c.Status]++
		r.Status = verdict.Worst(r.Status, c.Status)
	}
	var parts []string
	for _, s := range []verdict.Status{verdict.Pass, verdict.Warn, verdict.Fail, verdict.Error} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], strings.ToLower(string(s))))
		}
	}
	r.Summary = fmt.Sprintf("%d checks: %s", len(r.Checks), strings.Join(parts, ", "))
	return r
}

func (r *Report) add(name string, s verdict.Section) {
	r.Checks = append(r.Checks, Check{Name: name, Section: s})
}

func section(st verdict.Status, format string, args ...any) verdict.Section {
	s := verdict.NewSection()
	s.Status = st
	s.Summary = fmt.Sprintf(format, args...)
	return s
}

// checkNPU warns, never fails: Phase 0 runs on the CPU; later phases need the NPU.
func (r *Report) checkNPU(in Input) verdict.Section {
	devs, err := in.Devices()
	if err != nil {
		if errors.Is(err, npu.ErrNoDevice) {
			s := section(verdict.Warn, "none found (Phase 0 does not need one; phases 1–7 do)")
			s.Find("%v", err)
			return s
		}
		return section(verdict.Warn, "could not probe: %v", err)
	}
	r.Devices = devs
	s := section(verdict.Pass, "%d NPU(s): %s", len(devs), devs[0])
	for _, d := range devs {
		if !d.Usable() {
			s.Status = verdict.Warn
			s.Find("%s: %s", d.BDF, d.Problem)
		}
	}
	if s.Status == verdict.Warn {
		s.Summary = fmt.Sprintf("%d NPU(s), not all usable: %s", len(devs), devs[0])
	}
	return s
}

func (r *Report) checkXRT(in Input) verdict.Section {
	v, err := in.XRTVersion()
	if err != nil {
		s := section(verdict.Warn, "not available in this build (phases 1–7 need XRT ≥ 2.25 with NPU support)")
		s.Find("%v", err)
		return s
	}
	r.XRTVersion = v
	return section(verdict.Pass, "libxrt %s", v)
}

func (r *Report) checkMemory(in Input) verdict.Section {
	avail, err := memAvailable(in.MemInfoPath)
	if err != nil {
		return section(verdict.Warn, "cannot tell: %v", err)
	}
	r.MemAvailable = avail
	return judgeSpace("available memory", avail, in.NeedRAM, "close other programs or use a machine with more RAM")
}

func (r *Report) checkDisk(in Input) verdict.Section {
	free, err := in.DiskFreeAt(in.DiskPath)
	if err != nil {
		return section(verdict.Warn, "cannot tell free space at %s: %v", in.DiskPath, err)
	}
	r.DiskFree = free
	return judgeSpace("free disk at "+in.DiskPath, free, in.NeedDisk, "free space or point the cache elsewhere (HF_HOME)")
}

func judgeSpace(what string, have, need int64, fix string) verdict.Section {
	if need <= 0 {
		return section(verdict.Pass, "%s %.1f GiB (need not known yet)", what, gib(have))
	}
	if have < need {
		s := section(verdict.Fail, "%s %.1f GiB < %.1f GiB needed", what, gib(have), gib(need))
		s.Find("%s is %.1f GiB short: %s", what, gib(need-have), fix)
		return s
	}
	return section(verdict.Pass, "%s %.1f GiB ≥ %.1f GiB needed", what, gib(have), gib(need))
}

func gib(b int64) float64 { return float64(b) / (1 << 30) }

// MemAvailable is how much memory this machine can give a process now
// (/proc/meminfo's MemAvailable; 0 when unknown).
func MemAvailable() int64 {
	b, _ := memAvailable("/proc/meminfo")
	return b
}

// memAvailable reads MemAvailable (kB) from a meminfo file.
func memAvailable(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
	for sc.Scan() {
		var kb int64
		if n, _ := fmt.Sscanf(sc.Text(), "MemAvailable: %d kB", &kb); n == 1 {
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return 0, fmt.Errorf("%s has no MemAvailable line", path)
}

func statfsFree(path string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}

func (r *Report) checkPython(in Input) verdict.Section {
	p := in.Python
	if p == nil {
		return section(verdict.Warn, "not checked (no Python environment given)")
	}
	r.Python = p
	if p.Err != "" {
		s := section(verdict.Fail, "cannot use %s", orUnknown(p.Executable))
		s.Find("%s", p.Err)
		return s
	}
	s := section(verdict.Pass, "Python %s: torch %s, transformers %s, safetensors %s",
		orUnknown(p.Version), orMissing(p.Torch), orMissing(p.Transformers), orMissing(p.Safetensors))
	for _, pkg := range []struct{ name, version string }{{"torch", p.Torch}, {"transformers", p.Transformers}, {"safetensors", p.Safetensors}} {
		if pkg.version == "" {
			s.FailWith("%s is not installed in %s: pip install -r requirements.txt (make venv does it)", pkg.name, orUnknown(p.Executable))
		}
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func orMissing(s string) string {
	if s == "" {
		return "missing"
	}
	return s
}

// checkToken looks where huggingface_hub looks, in its order (hfcache):
// HF_TOKEN, then the token file. The token itself is never read into the
// report.
func (r *Report) checkToken(in Input) verdict.Section {
	for _, name := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if strings.TrimSpace(in.Getenv(name)) != "" {
			r.HFTokenSource = "$" + name
			return section(verdict.Pass, "token in $%s", name)
		}
	}
	path := tokenPath(in)
	info, err := os.Stat(path)
	switch {
	case err == nil && info.Mode().IsRegular() && info.Size() > 0:
		r.HFTokenSource = path
		return section(verdict.Pass, "token file %s", path)
	case err == nil:
		s := section(verdict.Warn, "token file %s is empty or not a file", path)
		s.Find("gated models (Llama, some Mistral) need a token: `hf auth login`, or set HF_TOKEN")
		return s
	case hfcache.Offline(in.Getenv):
		// Nothing is downloaded: a token would not be read.
		return section(verdict.Pass, "no token, none needed: the hub is switched off (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE), models come from the cache")
	default:
		s := section(verdict.Warn, "no token ($HF_TOKEN unset, no %s)", path)
		s.Find("public models work without one; gated models (Llama, some Mistral) need one: `hf auth login`, or set HF_TOKEN")
		return s
	}
}

// tokenPath is hfcache.TokenPath with HOME answered by the injected home.
func tokenPath(in Input) string {
	return hfcache.TokenPath(func(k string) string {
		if k == "HOME" && in.HomeDir != "" {
			return in.HomeDir
		}
		return in.Getenv(k)
	})
}

// treeParts are what Phase 0 uses from the mlir-air llms tree: the
// reference runner and its prompts (the baseline cannot run without them),
// and the hand-written model the later phases copy from (a warning only).
var treeParts = []struct {
	path   string
	dir    bool
	needed bool
}{
	{"verify/runners/hf_runner.py", false, true},
	{"verify/prompts", true, true},
	{"llama32_1b", true, false},
}

func checkTree(llms string) verdict.Section {
	if llms == "" {
		return section(verdict.Warn, "no llms directory given (--llms-dir)")
	}
	s := section(verdict.Pass, "mlir-air llms tree at %s", llms)
	for _, p := range treeParts {
		full := filepath.Join(llms, filepath.FromSlash(p.path))
		info, err := os.Stat(full)
		problem := ""
		switch {
		case err != nil:
			problem = fmt.Sprintf("%s: missing (%v)", p.path, errors.Unwrap(err))
		case info.IsDir() != p.dir:
			problem = fmt.Sprintf("%s: expected a %s", p.path, map[bool]string{true: "directory", false: "file"}[p.dir])
		default:
			continue
		}
		s.Find("%s", problem)
		if p.needed {
			s.Status = verdict.Fail
		} else {
			s.Status = verdict.Worst(s.Status, verdict.Warn)
		}
	}
	if s.Status != verdict.Pass {
		s.Summary = fmt.Sprintf("%s is not an mlir-air programming_examples/llms tree (%d part(s) missing)", llms, len(s.Findings))
	}
	return s
}

// Text renders the report for a terminal: one line per check, findings
// indented beneath.
func (r *Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "preflight: %s — %s\n", r.Status, r.Summary)
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "  %-7s %-14s %s\n", c.Status, c.Name, c.Summary)
		for _, f := range c.AllFindings() {
			fmt.Fprintf(&b, "  %-7s %-14s   %s\n", "", "", f)
		}
	}
	return b.String()
}
