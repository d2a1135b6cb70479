package orchestrator

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"phase0/internal/testenv"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"phase0/gate/config"
	"phase0/gate/verdict"
	"phase0/output/report"
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
	t.Parallel() // independent of the other tests; overlaps their waits (make test runs -parallel 3)
	llms := t.TempDir()
	model := tiny(t, "qwen3")
	s := settingsFor(t, llms)
	s.Name = "interrupted"
	mustPass(t, RunBF16(context.Background(), s, model, "test"))
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
			s.Sessions = nil // the interrupted run's own worker must be the one killed
			r := RunBF16(ctx, s, model, "test")
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
	r := RunBF16(context.Background(), s, tiny(t, "llama-llama3"), "test")
	if r.Status != verdict.Error || ExitCode(r) != 2 || r.ErrorKind != report.ErrorPythonEnvironment || !strings.Contains(r.Error, "PHASE0_PYTHON") {
		t.Fatalf("status %s, exit %d, error %q", r.Status, ExitCode(r), r.Error)
	}
	if entries, _ := os.ReadDir(llms); len(entries) != 0 {
		t.Errorf("a run that could not evaluate wrote %d entries into the llms dir", len(entries))
	}
}

// TestMessagesNameTheInput (issue 10 item 11, the cases that need a run): a
// model folder whose name keeps no ASCII letter asks for --name before
// anything is written; a tokenizer.json that is not JSON fails gate 2 naming
// the file (Python's JSONDecodeError names none).
func TestMessagesNameTheInput(t *testing.T) {
	t.Run("non-ASCII folder name", func(t *testing.T) {
		llms := t.TempDir()
		dir := filepath.Join(t.TempDir(), "модель")
		if err := os.CopyFS(dir, os.DirFS(tiny(t, "llama-llama3"))); err != nil {
			t.Fatal(err)
		}
		r := RunBF16(context.Background(), settingsFor(t, llms), dir, "test")
		if r.Status != verdict.Error || ExitCode(r) != 2 || !strings.Contains(r.Error, `"модель"`) || !strings.Contains(r.Error, "pass --name") {
			t.Fatalf("status %s, exit %d, error %q; want ERROR, 2, naming the folder and --name", r.Status, ExitCode(r), r.Error)
		}
		if entries, _ := os.ReadDir(llms); len(entries) != 0 {
			t.Errorf("the refused run wrote %d entries into the llms dir", len(entries))
		}
	})
	t.Run("broken tokenizer.json", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "model")
		if err := os.CopyFS(dir, os.DirFS(tiny(t, "qwen3"))); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{"version": `), 0o644); err != nil {
			t.Fatal(err)
		}
		r := BaselineRun(context.Background(), settingsFor(t, ""), dir, "test")
		b := r.Gates.HFBaseline
		if b == nil || !b.Status.Failed() {
			t.Fatalf("status %s, baseline %+v; want gate 2 failed", r.Status, b)
		}
		if why := strings.Join(b.Reasons, "\n"); !strings.Contains(why, filepath.Join(dir, "tokenizer.json")+" is not valid JSON") {
			t.Errorf("reasons do not name tokenizer.json:\n%s", why)
		}
	})
}

// TestWorkerDeathKeepsEarlierResults (issue 10 item 1): the runner
// crashing or hanging in the reference step fails gate 2 only: exit 1, the
// report written, TODO.md's blocker naming gate 2 alone, and the loader and
// config facts the worker had already answered kept as PASS. Each case
// starts a worker of its own (it dies with the case), all at once. One
// death by signal stands for all: how each way of dying is named (SIGSEGV,
// SIGABRT, an exit status, SIGKILL as the OOM killer's) is the worker's to
// say and python/worker's TestCallCrash checks every one; what this test
// checks, the stages before the death kept, is the same for each.
func TestWorkerDeathKeepsEarlierResults(t *testing.T) {
	t.Parallel() // independent of the other tests; overlaps their waits (make test runs -parallel 3)
	for _, tc := range []struct {
		name, body, reason string
		hang               bool
	}{
		{"killed as by the OOM killer", "        import os, signal\n        os.kill(os.getpid(), signal.SIGKILL)", "killed (likely out of memory)", false},
		{"timeout", "        import time\n        open(HUNG, 'w').close()\n        time.sleep(600)", "timed out", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var llms string
			var r *report.Report
			// The session's time limit must outlast torch's import and the
			// stages before the hang, which a loaded machine stretches: a
			// run that timed out before the runner hung (it writes HUNG
			// first) is tried again with twice the limit.
			for timeout := 12 * time.Second; ; timeout *= 2 {
				hung := filepath.Join(t.TempDir(), "hung")
				llms = fakeVerify(t, strings.ReplaceAll(tc.body, "HUNG", fmt.Sprintf("%q", hung)))
				s := settingsFor(t, llms)
				s.Sessions = nil // the case's worker dies with it
				if tc.hang {
					s.Timeout = timeout
				}
				r = RunBF16(context.Background(), s, tiny(t, "qwen3"), "test")
				if _, err := os.Stat(hung); !tc.hang || err == nil || timeout >= 96*time.Second {
					break
				}
				t.Logf("the session timed out at %s before the runner hung: again with %s", timeout, 2*timeout)
			}
			g := r.Gates
			if r.Status != verdict.Fail || ExitCode(r) != 1 || g.HFBaseline == nil || !g.HFBaseline.Status.Failed() || !strings.Contains(strings.Join(g.HFBaseline.Reasons, "\n"), tc.reason) {
				t.Fatalf("exit %d, status %s, baseline %+v; want exit 1 with gate 2 failed naming %s", ExitCode(r), r.Status, g.HFBaseline, tc.reason)
			}
			if g.PyWeights == nil || g.PyWeights.Status != verdict.Pass {
				t.Errorf("python_weights %+v, want PASS kept", g.PyWeights)
			}
			if g.ConfigConsistency == nil || g.ConfigConsistency.Status != verdict.Pass {
				t.Errorf("config_consistency %+v, want PASS kept", g.ConfigConsistency)
			}
			if _, err := os.Stat(filepath.Join(llms, "qwen3", "docs/development_progress/phase0/report.json")); err != nil {
				t.Errorf("report not written: %v", err)
			}
			todo := string(mustRead(t, filepath.Join(llms, "qwen3", "TODO.md")))
			if !strings.Contains(todo, "needs-human-review") {
				t.Errorf("TODO.md lacks the blocker:\n%s", todo)
			}
			if strings.Contains(strings.ToLower(todo), "config consistency:") || strings.Contains(strings.ToLower(todo), "python weights:") {
				t.Errorf("TODO.md blames a gate that passed:\n%s", todo)
			}
		})
	}
}

// TestWrongInterpreterIsCouldNotEvaluate (issue 10 item 3): an interpreter
// that is not a usable CPython is exit 2 before anything is written.
func TestWrongInterpreterIsCouldNotEvaluate(t *testing.T) {
	for _, py := range []string{"/bin/sh", "/no/such/python3", filepath.Join(t.TempDir(), "python")} {
		t.Run(py, func(t *testing.T) {
			llms := t.TempDir()
			s := settingsFor(t, llms)
			s.Python = py
			r := RunBF16(context.Background(), s, tiny(t, "llama-llama3"), "test")
			if r.Status != verdict.Error || ExitCode(r) != 2 || !strings.Contains(r.Error, py) {
				t.Fatalf("status %s, exit %d, error %q; want ERROR, 2, naming %s", r.Status, ExitCode(r), r.Error, py)
			}
			if entries, _ := os.ReadDir(llms); len(entries) != 0 {
				t.Errorf("a run that could not evaluate wrote %d entries into the llms dir", len(entries))
			}
		})
	}
}

// TestUnwritableRecordIsAFailedRun (issue 10 item 5): a report that cannot
// be written, or a progress.md whose phase0 entry cannot be updated, is exit
// 2 with Phase 0 left unticked (or as it was).
func TestUnwritableRecordIsAFailedRun(t *testing.T) {
	t.Parallel() // independent of the other tests; overlaps their waits (make test runs -parallel 3)
	t.Run("report dir cannot be created", func(t *testing.T) {
		llms := t.TempDir()
		blocker := filepath.Join(t.TempDir(), "a-file")
		if err := os.WriteFile(blocker, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		s := settingsFor(t, llms)
		s.Name = "unrecorded"
		s.ReportDir = filepath.Join(blocker, "phase0")
		r := RunBF16(context.Background(), s, tiny(t, "qwen3"), "test")
		if r.Status != verdict.Error || ExitCode(r) != 2 || !strings.Contains(r.Error, "recording the result") || !strings.Contains(r.Error, blocker) {
			t.Fatalf("status %s, exit %d, error %q; want ERROR, 2, naming %s", r.Status, ExitCode(r), r.Error, blocker)
		}
		// The workspace this run created goes with it: no TODO.md ticked,
		// no progress entry without a report, nothing half-written.
		if _, err := os.Stat(filepath.Join(llms, "unrecorded")); !os.IsNotExist(err) {
			t.Errorf("the workspace the failed run created is left (%v)", err)
		}
	})
	t.Run("progress.md holds two phase0 entries", func(t *testing.T) {
		llms := t.TempDir()
		s := settingsFor(t, llms)
		s.Name = "twice"
		mustPass(t, RunBF16(context.Background(), s, tiny(t, "qwen3"), "test"))
		ws := filepath.Join(llms, "twice")
		progressPath := filepath.Join(ws, "docs/development_progress/progress.md")
		progress := mustRead(t, progressPath)
		doubled := append(append([]byte{}, progress...), "\n<!-- phase0:begin -->\nold\n<!-- phase0:end -->\n"...)
		if err := os.WriteFile(progressPath, doubled, 0o644); err != nil {
			t.Fatal(err)
		}
		todoBefore := mustRead(t, filepath.Join(ws, "TODO.md"))
		s2 := settingsFor(t, llms)
		s2.Name = "twice"
		r := RunBF16(context.Background(), s2, tiny(t, "qwen3"), "test")
		if r.Status != verdict.Error || ExitCode(r) != 2 || !strings.Contains(r.Error, "more than one phase0 entry") {
			t.Fatalf("status %s, exit %d, error %q; want ERROR, 2, naming the duplicated entry", r.Status, ExitCode(r), r.Error)
		}
		if got := mustRead(t, progressPath); !bytes.Equal(got, doubled) {
			t.Errorf("progress.md was rewritten")
		}
		if got := mustRead(t, filepath.Join(ws, "TODO.md")); !bytes.Equal(got, todoBefore) {
			t.Errorf("TODO.md changed:\n%s", got)
		}
	})
}

// TestInterruptInBehaviourKeepsGate3: a run interrupted in config_facts'
// last op (the helpers' behaviour) is ERROR, and its report's gate 3 still
// shows what config_facts had judged before (the generated module's and
// transformers' config), not only the weights stage's cross-check.
func TestInterruptInBehaviourKeepsGate3(t *testing.T) {
	t.Parallel() // independent of the other tests; overlaps their waits (make test runs -parallel 3)
	llms := t.TempDir()
	s := settingsFor(t, llms)
	s.Name = "behaviourstop"
	mustPass(t, RunBF16(context.Background(), s, tiny(t, "qwen3"), "test"))
	// An edited helpers module is kept (not phase0's bytes any more); only
	// the behaviour op imports it: it says so, then hangs.
	marker := filepath.Join(t.TempDir(), "importing")
	helpers := filepath.Join(llms, s.Name, s.Name+"_cpu_helpers.py")
	testenv.WriteFile(t, helpers, string(mustRead(t, helpers))+fmt.Sprintf("\nimport time\nopen(%q, \"w\").close()\ntime.sleep(600)\n", marker))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(marker); err == nil {
				cancel()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	// Its own worker: the hang is in the op, and a shared session's
	// worker would stay busy with it after the interrupt.
	s = isolated(settingsFor(t, llms))
	s.Name = "behaviourstop"
	r := RunBF16(ctx, s, tiny(t, "qwen3"), "test")
	if r.Status != verdict.Error || !r.Interrupted {
		t.Fatalf("status %s, interrupted %v, error %q; want an interrupted ERROR", r.Status, r.Interrupted, r.Error)
	}
	cc := r.Gates.ConfigConsistency
	if cc == nil || !slices.Contains(cc.Sources, config.SourceTransformers) {
		t.Errorf("config consistency %+v: want the transformers comparison config_facts made before the interruption", cc)
	}
}
