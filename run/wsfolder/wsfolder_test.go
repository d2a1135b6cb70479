package wsfolder

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"phase0/output/scaffold"
	"phase0/run/resolve"
)

// In the workspace (under its lock) every stale temporary goes; in a report
// folder outside it only those older than staleAge, since another run may
// be writing there.
func TestSweepWorkspaceAndOutsideReportDir(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "model")
	reports := t.TempDir()
	now := time.Now()
	mk := func(p string, age time.Duration) string {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	wsFresh := mk(filepath.Join(ws, ".TODO.md.tmp-1"), 0)
	wsDeep := mk(filepath.Join(ws, "docs", "development_progress", "phase0", ".report.md.tmp-2"), time.Hour)
	repOld := mk(filepath.Join(reports, ".report.json.tmp-3"), time.Hour)
	repFresh := mk(filepath.Join(reports, ".report.json.tmp-4"), 0)
	user := mk(filepath.Join(ws, ".notes.tmp-draft"), time.Hour)

	swept, err := Sweep(reports, ws, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(swept)
	want := []string{wsFresh, wsDeep, repOld}
	slices.Sort(want)
	if !slices.Equal(swept, want) {
		t.Fatalf("swept %v, want %v", swept, want)
	}
	for _, p := range []string{repFresh, user} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

// A model folder reached through a symlink (issue 36 item 2): the
// checkpoint is the real folder, named as the user named it, and a
// workspace inside it — through the link or not — is refused.
func TestRecordCheckpointThroughASymlink(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "mymodel")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	ref := &resolve.Model{Dir: real, ID: link, Local: true}
	for _, ws := range []string{filepath.Join(link, "ws"), filepath.Join(real, "ws")} {
		var spec scaffold.Spec
		if err := RecordCheckpoint(&spec, ref, ws, ""); err == nil || !strings.Contains(err.Error(), "inside the model folder") {
			t.Errorf("workspace %s: %v, want it refused as inside the model folder", ws, err)
		}
	}
	var spec scaffold.Spec
	ws := filepath.Join(t.TempDir(), "mymodel")
	if err := RecordCheckpoint(&spec, ref, ws, ""); err != nil || spec.ModelID != "mymodel" {
		t.Errorf("workspace %s: %v, model id %q, want mymodel", ws, err, spec.ModelID)
	}
}
