package preflight

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"phase0/internal/testenv"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/npu"
)

const gb = int64(1) << 30

// base is a machine that passes everything; each case changes one thing.
func base(t *testing.T) Input {
	dir := t.TempDir()
	llms := filepath.Join(dir, "llms")
	for _, d := range []string{"verify/runners", "verify/prompts", "llama32_1b"} {
		if err := os.MkdirAll(filepath.Join(llms, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testenv.WriteFile(t, filepath.Join(llms, "verify/runners/hf_runner.py"), "class HfRunner: ...\n")
	meminfo := filepath.Join(dir, "meminfo")
	testenv.WriteFile(t, meminfo, "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   16777216 kB\n")
	env := map[string]string{"HF_TOKEN": "hf_x"}
	return Input{
		LLMsDir: llms, NeedRAM: 4 * gb, NeedDisk: 2 * gb, DiskPath: dir,
		Python: &PythonEnv{Executable: "/venv/bin/python", Version: "3.12.3", Torch: "2.9.1", Transformers: "4.57.1", Safetensors: "0.6.2"},
		Getenv: func(k string) string { return env[k] },
		Devices: func() ([]npu.Device, error) {
			return []npu.Device{{Name: "AMD NPU2", BDF: "0000:c5:00.1", Node: "/dev/accel/accel0", Driver: "amdxdna", Source: "sysfs"}}, nil
		},
		XRTVersion:  func() (string, error) { return "2.25.0", nil },
		MemInfoPath: meminfo,
		DiskFreeAt:  func(string) (int64, error) { return 50 * gb, nil },
		HomeDir:     filepath.Join(dir, "home"),
	}
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestChecks(t *testing.T) {
	cases := []struct {
		name    string
		change  func(t *testing.T, in *Input)
		check   string
		status  verdict.Status
		summary string // substring of the check's summary
		finding string // substring of one finding ("" = none required)
	}{
		{"npu present", nil, "npu", verdict.Pass, "1 NPU(s): AMD NPU2 at 0000:c5:00.1", ""},
		{"npu none", func(t *testing.T, in *Input) {
			in.Devices = func() ([]npu.Device, error) {
				return nil, fmt.Errorf("%w: no AMD NPU under /sys/bus/pci/devices", npu.ErrNoDevice)
			}
		}, "npu", verdict.Warn, "none found", "no AMD NPU under /sys/bus/pci/devices"},
		{"npu not usable", func(t *testing.T, in *Input) {
			in.Devices = func() ([]npu.Device, error) {
				return []npu.Device{{Name: "AMD NPU2", BDF: "0000:c5:00.1", Problem: "/dev/accel/accel0: permission denied"}}, nil
			}
		}, "npu", verdict.Warn, "not all usable", "0000:c5:00.1: /dev/accel/accel0: permission denied"},
		{"npu real probe on fake sysfs", func(t *testing.T, in *Input) {
			sys := t.TempDir()
			in.Devices = func() ([]npu.Device, error) { return npu.Devices(npu.WithSysRoot(sys), npu.WithDevRoot(sys)) }
		}, "npu", verdict.Warn, "none found", "is sysfs mounted?"},
		{"xrt linked", nil, "xrt", verdict.Pass, "libxrt 2.25.0", ""},
		{"xrt absent", func(t *testing.T, in *Input) {
			in.XRTVersion = func() (string, error) { return "", npu.ErrNoXRT }
		}, "xrt", verdict.Warn, "not available in this build", "rebuild with -tags xrt"},
		{"memory enough", nil, "memory", verdict.Pass, "available memory 16.0 GiB ≥ 4.0 GiB needed", ""},
		{"memory short", func(t *testing.T, in *Input) { in.NeedRAM = 20 * gb }, "memory", verdict.Fail, "16.0 GiB < 20.0 GiB needed", "4.0 GiB short"},
		{"memory need unknown", func(t *testing.T, in *Input) { in.NeedRAM = 0 }, "memory", verdict.Pass, "need not known yet", ""},
		{"meminfo without MemAvailable", func(t *testing.T, in *Input) {
			testenv.WriteFile(t, in.MemInfoPath, "MemTotal: 1 kB\n")
		}, "memory", verdict.Warn, "has no MemAvailable line", ""},
		{"meminfo missing", func(t *testing.T, in *Input) { in.MemInfoPath = filepath.Join(t.TempDir(), "none") }, "memory", verdict.Warn, "cannot tell", ""},
		{"disk short", func(t *testing.T, in *Input) {
			in.DiskFreeAt = func(string) (int64, error) { return gb, nil }
		}, "disk", verdict.Fail, "1.0 GiB < 2.0 GiB needed", "HF_HOME"},
		{"disk real statfs", func(t *testing.T, in *Input) { in.DiskFreeAt = nil; in.NeedDisk = 1 }, "disk", verdict.Pass, "≥ 0.0 GiB needed", ""},
		{"disk unreadable", func(t *testing.T, in *Input) {
			in.DiskFreeAt = nil
			in.DiskPath = filepath.Join(t.TempDir(), "gone")
		}, "disk", verdict.Warn, "cannot tell free space", ""},
		{"python ok", nil, "python", verdict.Pass, "Python 3.12.3: torch 2.9.1, transformers 4.57.1, safetensors 0.6.2", ""},
		{"python not given", func(t *testing.T, in *Input) { in.Python = nil }, "python", verdict.Warn, "not checked", ""},
		{"python missing torch", func(t *testing.T, in *Input) { in.Python.Torch = "" }, "python", verdict.Fail, "torch missing", "torch is not installed in /venv/bin/python"},
		{"python broken", func(t *testing.T, in *Input) {
			in.Python = &PythonEnv{Executable: "/venv/bin/python", Err: "ImportError: libtorch_cpu.so: cannot open shared object file"}
		}, "python", verdict.Fail, "cannot use /venv/bin/python", "libtorch_cpu.so"},
		{"token env", nil, "hf_token", verdict.Pass, "token in $HF_TOKEN", ""},
		{"token file under HF_HOME", func(t *testing.T, in *Input) {
			hf := t.TempDir()
			testenv.WriteFile(t, filepath.Join(hf, "token"), "hf_secret\n")
			in.Getenv = envOf(map[string]string{"HF_HOME": hf})
		}, "hf_token", verdict.Pass, "token file ", ""},
		{"token file default location", func(t *testing.T, in *Input) {
			testenv.WriteFile(t, filepath.Join(in.HomeDir, ".cache/huggingface/token"), "hf_secret")
			in.Getenv = envOf(nil)
		}, "hf_token", verdict.Pass, filepath.Join(".cache", "huggingface", "token"), ""},
		{"token file empty", func(t *testing.T, in *Input) {
			hf := t.TempDir()
			testenv.WriteFile(t, filepath.Join(hf, "token"), "")
			in.Getenv = envOf(map[string]string{"HF_HOME": hf})
		}, "hf_token", verdict.Warn, "is empty or not a file", "`hf auth login`"},
		{"no token", func(t *testing.T, in *Input) { in.Getenv = envOf(map[string]string{"HF_HOME": t.TempDir()}) },
			"hf_token", verdict.Warn, "no token", "public models work without one"},
		{"no token, hub off", func(t *testing.T, in *Input) {
			in.Getenv = envOf(map[string]string{"HF_HOME": t.TempDir(), "HF_HUB_OFFLINE": "1"})
		}, "hf_token", verdict.Pass, "none needed: the hub is switched off", ""},
		{"no token, hub off by transformers' switch", func(t *testing.T, in *Input) {
			in.Getenv = envOf(map[string]string{"HF_HOME": t.TempDir(), "TRANSFORMERS_OFFLINE": "yes"})
		}, "hf_token", verdict.Pass, "none needed", ""},
		{"no token, hub on (0)", func(t *testing.T, in *Input) {
			in.Getenv = envOf(map[string]string{"HF_HOME": t.TempDir(), "HF_HUB_OFFLINE": "0"})
		}, "hf_token", verdict.Warn, "no token", "public models work without one"},
		{"tree ok", nil, "mlir_air_tree", verdict.Pass, "mlir-air llms tree at", ""},
		{"tree not given", func(t *testing.T, in *Input) { in.LLMsDir = "" }, "mlir_air_tree", verdict.Warn, "no llms directory given", ""},
		{"tree missing runner", func(t *testing.T, in *Input) {
			os.Remove(filepath.Join(in.LLMsDir, "verify/runners/hf_runner.py"))
		}, "mlir_air_tree", verdict.Fail, "1 part(s) missing", "verify/runners/hf_runner.py: missing"},
		{"tree prompts is a file", func(t *testing.T, in *Input) {
			os.Remove(filepath.Join(in.LLMsDir, "verify/prompts"))
			testenv.WriteFile(t, filepath.Join(in.LLMsDir, "verify/prompts"), "x")
		}, "mlir_air_tree", verdict.Fail, "1 part(s) missing", "verify/prompts: expected a directory"},
		{"tree without llama32_1b", func(t *testing.T, in *Input) {
			os.Remove(filepath.Join(in.LLMsDir, "llama32_1b"))
		}, "mlir_air_tree", verdict.Warn, "1 part(s) missing", "llama32_1b: missing"},
		{"tree is empty dir", func(t *testing.T, in *Input) { in.LLMsDir = t.TempDir() }, "mlir_air_tree", verdict.Fail, "3 part(s) missing", "llama32_1b: missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := base(t)
			if tc.change != nil {
				tc.change(t, &in)
			}
			r := Run(in)
			var c *Check
			for i := range r.Checks {
				if r.Checks[i].Name == tc.check {
					c = &r.Checks[i]
				}
			}
			if c == nil {
				t.Fatalf("no %q check in %+v", tc.check, r.Checks)
			}
			if c.Status != tc.status || !strings.Contains(c.Summary, tc.summary) {
				t.Errorf("%s = %s %q, want %s containing %q", tc.check, c.Status, c.Summary, tc.status, tc.summary)
			}
			if tc.finding != "" && !strings.Contains(strings.Join(c.Findings, "\n"), tc.finding) {
				t.Errorf("findings %q lack %q", c.Findings, tc.finding)
			}
			if got := verdict.Worst(statuses(r)...); r.Status != got {
				t.Errorf("overall %s, want the worst check %s", r.Status, got)
			}
		})
	}
}

func statuses(r *Report) []verdict.Status {
	var out []verdict.Status
	for _, c := range r.Checks {
		out = append(out, c.Status)
	}
	return out
}

func TestReportJSONAndText(t *testing.T) {
	in := base(t)
	in.NeedRAM = 20 * gb
	in.XRTVersion = func() (string, error) { return "", npu.ErrNoXRT }
	r := Run(in)
	if r.Status != verdict.Fail || r.Summary != "7 checks: 5 pass, 1 warn, 1 fail" {
		t.Fatalf("overall = %s %q", r.Status, r.Summary)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Status string `json:"status"`
		Checks []struct {
			Name, Status, Summary string
			Findings              []string
		} `json:"checks"`
		Devices       []npu.Device `json:"npu_devices"`
		MemAvailable  int64        `json:"mem_available_bytes"`
		HFTokenSource string       `json:"hf_token_source"`
		Python        *PythonEnv   `json:"python"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Status != "FAIL" || len(back.Checks) != 7 || back.Checks[0].Name != "npu" || back.Checks[2].Status != "FAIL" {
		t.Errorf("JSON round trip: %s", b)
	}
	if len(back.Devices) != 1 || back.MemAvailable != 16*gb || back.HFTokenSource != "$HF_TOKEN" || back.Python.Torch != "2.9.1" {
		t.Errorf("facts lost in JSON: %s", b)
	}
	if strings.Contains(string(b), "hf_x") {
		t.Error("the token's value leaked into the report")
	}
	text := r.Text()
	for _, want := range []string{"preflight: FAIL — 7 checks", "  FAIL    memory ", "4.0 GiB short", "  WARN    xrt ", "rebuild with -tags xrt"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
}

// On this machine, with nothing injected but the inputs, every check runs
// and the NPU check says why there is none (or lists it).
func TestRunHost(t *testing.T) {
	r := Run(Input{NeedRAM: 1, NeedDisk: 1, Getenv: envOf(nil), HomeDir: t.TempDir()})
	if len(r.Checks) != 7 {
		t.Fatalf("%d checks", len(r.Checks))
	}
	npuCheck := r.Checks[0]
	if npuCheck.Status == verdict.Warn && len(r.Devices) == 0 && len(npuCheck.Findings) == 0 {
		t.Errorf("no NPU and no reason: %+v", npuCheck)
	}
	if r.MemAvailable <= 0 || r.DiskFree <= 0 {
		t.Errorf("host memory %d, disk %d: want both read", r.MemAvailable, r.DiskFree)
	}
	t.Log("\n" + r.Text())
}
