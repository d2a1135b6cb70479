package orchestrator

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"phase0/verdict"
)

// cancelOn cancels a context when a progress line for the named stage is
// printed: an interruption that lands right after that stage.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	stage  string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bytes.Contains(p, []byte("phase0: "+c.stage+" ")) {
		c.cancel()
	}
	return c.buf.Write(p)
}

// TestInterruptKeepsTheRecord: a PASS is recorded; a later run interrupted
// mid-way exits 130 as ERROR and leaves report.json, TODO.md and
// progress.md byte-identical.
func TestInterruptKeepsTheRecord(t *testing.T) {
	llms := t.TempDir()
	model := tiny(t, "qwen3")
	s := settingsFor(t, llms)
	s.Name = "interrupted"
	mustPass(t, Run(context.Background(), s, model, "test"))
	ws := filepath.Join(llms, "interrupted")
	files := []string{"TODO.md", "docs/development_progress/progress.md", "docs/development_progress/phase0/report.json"}
	before := map[string][]byte{}
	for _, f := range files {
		before[f] = mustRead(t, filepath.Join(ws, f))
	}
	if !bytes.Contains(before["TODO.md"], []byte("- [x] 0:")) {
		t.Fatalf("the first run did not tick Phase 0:\n%s", before["TODO.md"])
	}

	for _, after := range []string{"generate", "python_weights", "config_facts"} {
		t.Run("after "+after, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := settingsFor(t, llms)
			s.Name = "interrupted"
			s.Fresh = true // the inputs are unchanged: without it the recorded PASS is reused
			s.Progress = &cancelOn{stage: after, cancel: cancel}
			r := Run(ctx, s, model, "test")
			if r.Status != verdict.Error || !r.Interrupted || ExitCode(r) != verdict.Interrupted {
				t.Fatalf("status %s, interrupted %v, exit %d; want ERROR, true, 130 (error %q)", r.Status, r.Interrupted, ExitCode(r), r.Error)
			}
			for _, st := range r.Stages {
				if st.Name == "record" {
					t.Errorf("the interrupted run recorded: %+v", st)
				}
			}
			for _, f := range files {
				if got := mustRead(t, filepath.Join(ws, f)); !bytes.Equal(got, before[f]) {
					t.Errorf("%s changed after an interrupted run", f)
				}
			}
		})
	}
}

// TestNoPythonIsCouldNotEvaluate: without an interpreter the run stops with
// exit 2 before anything is generated or recorded.
func TestNoPythonIsCouldNotEvaluate(t *testing.T) {
	llms := t.TempDir()
	s := settingsFor(t, llms)
	s.Python = ""
	r := Run(context.Background(), s, tiny(t, "llama-llama3"), "test")
	if r.Status != verdict.Error || ExitCode(r) != 2 || !errors.Is(errors.New(r.Error), ErrNoPython) && !strings.Contains(r.Error, "PHASE0_PYTHON") {
		t.Fatalf("status %s, exit %d, error %q", r.Status, ExitCode(r), r.Error)
	}
	if entries, _ := os.ReadDir(llms); len(entries) != 0 {
		t.Errorf("a run that could not evaluate wrote %d entries into the llms dir", len(entries))
	}
}
