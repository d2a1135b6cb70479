package orchestrator

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"phase0/gate/verdict"
	"phase0/output/report"
	"phase0/output/scaffold"
)

// onStage runs do when the progress line of the named stage is printed.
type onStage struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	stage string
	do    func()
}

func (o *onStage) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.do != nil && bytes.Contains(p, []byte("phase0: "+o.stage+" ")) {
		o.do()
		o.do = nil
	}
	return o.buf.Write(p)
}

// TestRecordFaults: what a user sees when the disk refuses a write.
func TestRecordFaults(t *testing.T) {
	t.Parallel() // independent of the other tests; overlaps their waits (make test runs -parallel 3)
	llms := t.TempDir()
	s := settingsFor(t, llms)
	s.Name, s.ReferenceSteps = "faults", 2
	model := tiny(t, "qwen3")
	ws := filepath.Join(llms, "faults")
	mustPass(t, RunBF16(context.Background(), s, model, "test"))
	// A generated workspace takes the umask as any folder the user makes
	// (0755 under make test's 0022), not a temporary folder's 0700. The
	// umask is read from /proc: setting it would race the parallel tests.
	status := string(mustRead(t, "/proc/self/status"))
	_, rest, _ := strings.Cut(status, "Umask:\t")
	umask, err := strconv.ParseUint(strings.SplitN(rest, "\n", 2)[0], 8, 32)
	if err != nil {
		t.Fatalf("the umask in /proc/self/status: %v", err)
	}
	if st, err := os.Stat(ws); err != nil {
		t.Error(err)
	} else if want := os.FileMode(0o777 &^ umask); st.Mode().Perm() != want {
		t.Errorf("workspace %s: mode %v, want %v", ws, st.Mode().Perm(), want)
	}
	s.Fresh = true

	t.Run("reference not writable: could not evaluate, one line naming the file, the record kept", func(t *testing.T) {
		// reference.safetensors is a folder: the recording cannot go in.
		if err := os.RemoveAll(filepath.Join(ws, "reference")); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(ws, "reference", "reference.safetensors"), 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(filepath.Join(ws, "reference"))
		reports := filepath.Join(ws, "docs", "development_progress", "phase0")
		before := mustRead(t, filepath.Join(reports, "report.json"))
		r := RunBF16(context.Background(), s, model, "test")
		if r.Status != verdict.Error || ExitCode(r) != 2 || r.ErrorKind != report.ErrorReference ||
			strings.Contains(r.Error, "\n") || strings.Contains(r.Error, "raceback") ||
			!strings.Contains(r.Error, filepath.Join(ws, "reference", "reference.safetensors")) {
			t.Fatalf("status %s, exit %d, kind %q, error %q: want ERROR, exit 2, reference_failed, one line naming reference.safetensors", r.Status, ExitCode(r), r.ErrorKind, r.Error)
		}
		if after := mustRead(t, filepath.Join(reports, "report.json")); !bytes.Equal(before, after) {
			t.Error("report.json was rewritten by a run whose reference could not be written")
		}
	})

	t.Run("record refused half-way: nothing written, no PASS report", func(t *testing.T) {
		reports := filepath.Join(ws, "docs", "development_progress", "phase0")
		before := mustRead(t, filepath.Join(reports, "report.json"))
		todo := filepath.Join(ws, "TODO.md")
		todoBefore := mustRead(t, todo)
		// TODO.md becomes a folder while the gates run: the record cannot
		// write it, and must not write the others either.
		s.Progress = &onStage{stage: "machine", do: func() {
			if err := os.Rename(todo, todo+".moved"); err != nil {
				t.Error(err)
			}
			if err := os.Mkdir(todo, 0o755); err != nil {
				t.Error(err)
			}
		}}
		r := RunBF16(context.Background(), s, model, "test")
		if r.Status != verdict.Error || r.ErrorKind != report.ErrorRecord || !strings.Contains(r.Error, "nothing was written") || !strings.Contains(r.Error, todo) {
			t.Fatalf("status %s, kind %q, error %q; want ERROR, record_failed, naming %s", r.Status, r.ErrorKind, r.Error, todo)
		}
		if after := mustRead(t, filepath.Join(reports, "report.json")); !bytes.Equal(before, after) {
			t.Error("report.json was rewritten by a record that failed")
		}
		if err := os.Remove(todo); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(todo+".moved", todo); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, todo); !bytes.Equal(got, todoBefore) {
			t.Error("TODO.md changed")
		}
		if matches, _ := filepath.Glob(filepath.Join(reports, ".*.tmp-*")); len(matches) > 0 {
			t.Errorf("temporary files left: %v", matches)
		}
	})

	t.Run("lock file unusable: no advice to wait for a run that does not exist", func(t *testing.T) {
		lock := filepath.Join(ws, scaffold.LockName)
		os.Remove(lock)
		if err := os.Mkdir(lock, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(lock)
		r := RunBF16(context.Background(), s, model, "test")
		if r.Status != verdict.Error || !strings.Contains(r.Error, lock) || strings.Contains(r.Error, "wait for that run") {
			t.Errorf("status %s, error %q", r.Status, r.Error)
		}
	})
}
