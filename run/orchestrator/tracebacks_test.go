package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/internal/testenv"
)

// TestTracebacksStayOutOfReports: a loader that raises is a gate 1 FAIL
// whose findings (report.json's gates.python_weights findings and problems,
// report.md's Findings) are one line each; the traceback is in the run's
// log on stderr. `reference --out` on a read-only filesystem fails at once,
// before any Python, with a one-line error.
func TestTracebacksStayOutOfReports(t *testing.T) {
	t.Parallel() // independent of the other tests; overlaps their waits (make test runs -parallel 3)
	model := tiny(t, "qwen3")

	t.Run("a loader that raises", func(t *testing.T) {
		out := t.TempDir()
		s := settingsFor(t, out)
		s.Name, s.ReferenceSteps = "raises", 0
		mustPass(t, RunBF16(context.Background(), s, model, "test"))
		ws := filepath.Join(out, "raises")
		module := filepath.Join(ws, "raises_weights.py")
		src := mustReadString(t, module)
		testenv.WriteFile(t, module, src+"\n\ndef load_weights(*args, **kwargs):\n    assert False, \"the loader refuses\"\n")
		log := &bytes.Buffer{}
		s.Progress, s.Fresh = log, true
		r := RunBF16(context.Background(), s, model, "test")
		if r.Status != verdict.Fail || r.Gates.PyWeights == nil || r.Gates.PyWeights.Status != verdict.Fail {
			b, _ := r.JSON()
			t.Fatalf("not a gate 1 FAIL:\n%s", b)
		}
		var disk struct {
			Gates struct {
				PythonWeights struct {
					Findings []string `json:"findings"`
					Problems []string `json:"problems"`
				} `json:"python_weights"`
			} `json:"gates"`
		}
		js := mustRead(t, filepath.Join(ws, "docs", "development_progress", "phase0", "report.json"))
		if err := json.Unmarshal(js, &disk); err != nil {
			t.Fatal(err)
		}
		lines := append(disk.Gates.PythonWeights.Findings, disk.Gates.PythonWeights.Problems...)
		if len(lines) == 0 {
			t.Fatalf("report.json has no python_weights findings:\n%s", js)
		}
		for _, l := range lines {
			if strings.Contains(l, "\n") || strings.Contains(l, "Traceback (most recent call") || !strings.Contains(l, "the loader refuses") {
				t.Errorf("finding %q: want one line naming the assertion, no traceback", l)
			}
		}
		md := mustReadString(t, filepath.Join(ws, "docs", "development_progress", "phase0", "report.md"))
		if strings.Contains(md, "Traceback (most recent call") || strings.Contains(md, "File \"") {
			t.Errorf("report.md holds a traceback:\n%s", md)
		}
		if got := log.String(); !strings.Contains(got, "Traceback") || !strings.Contains(got, "the loader refuses") {
			t.Errorf("the run's log lacks the traceback:\n%s", got)
		}
	})

	t.Run("reference --out on a read-only filesystem", func(t *testing.T) {
		ro := testenv.Tmpfs(t, 64<<10, "ro")
		s := settingsFor(t, t.TempDir())
		s.ReferenceOut = filepath.Join(ro, "ref")
		r := ReferenceRun(context.Background(), s, model, "test")
		if ExitCode(r) != 2 || strings.Contains(r.Error, "\n") || !strings.Contains(r.Error, "read-only") || !strings.Contains(r.Error, s.ReferenceOut) {
			t.Fatalf("exit %d, error %q; want 2 and one line naming --out and the read-only filesystem", ExitCode(r), r.Error)
		}
		var ran []string
		for _, sg := range r.Stages {
			ran = append(ran, sg.Name)
		}
		if last := r.Stages[len(r.Stages)-1]; last.Name != "out" || len(r.Stages) > 2 {
			t.Errorf("stages %v: want the check of --out to fail before anything else runs", ran)
		}
		js, _ := json.Marshal(r)
		if bytes.Contains(js, []byte("Traceback (most recent call")) {
			t.Errorf("the JSON report holds a traceback:\n%s", js)
		}
		if _, err := os.Stat(s.ReferenceOut); !os.IsNotExist(err) {
			t.Errorf("--out exists: %v", err)
		}
	})
}
