package wsfolder

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"phase0/internal/testenv"
	"phase0/output/report"
	"phase0/output/scaffold"
	"phase0/read/model"
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

// Two local checkpoints with the same folder name (issue 49 item 5:
// run1/checkpoint-500 and run2/checkpoint-500) do not share a workspace:
// the second is a name collision naming both folders and a --name, and
// the first's workspace is left as it was. Once the first checkpoint is
// gone (moved or deleted) the workspace is the second's.
func TestSameFolderNameOfAnotherCheckpointCollides(t *testing.T) {
	raw, err := model.ParseRaw([]byte(`{"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 512}`))
	if err != nil {
		t.Fatal(err)
	}
	a := model.Analyze(raw)
	if a.Rejected() {
		t.Fatal(a.Rejections)
	}
	base := t.TempDir()
	root := filepath.Join(base, "workspace")
	specOf := func(dir string) (scaffold.Spec, []scaffold.File) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		testenv.WriteFile(t, filepath.Join(dir, "config.json"), "{}")
		spec := scaffold.Spec{Config: *a.Config, Family: a.Family, Name: "checkpoint_500", ModelID: dir, ToolVersion: "test"}
		if err := RecordCheckpoint(&spec, &resolve.Model{Dir: dir, ID: dir, Local: true}, filepath.Join(root, spec.Name), ""); err != nil {
			t.Fatal(err)
		}
		files, err := scaffold.Render(spec)
		if err != nil {
			t.Fatal(err)
		}
		return spec, files
	}
	first, firstFiles := specOf(filepath.Join(base, "run1", "checkpoint-500"))
	if _, err := scaffold.Write(filepath.Join(root, first.Name), firstFiles); err != nil {
		t.Fatal(err)
	}
	before := testenv.SnapshotTree(t, root)
	if mode, err := Classify(root, first, firstFiles); err != nil || mode != report.ModeGenerated {
		t.Fatalf("the first checkpoint again: %s, %v", mode, err)
	}
	second, secondFiles := specOf(filepath.Join(base, "run2", "checkpoint-500"))
	_, err = Classify(root, second, secondFiles)
	for _, want := range []string{"workspace name collision", filepath.Join(base, "run1", "checkpoint-500"), filepath.Join(base, "run2", "checkpoint-500"), "--name run2_checkpoint_500"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("second checkpoint: %v, want it to say %q", err, want)
		}
	}
	if after := testenv.SnapshotTree(t, root); !maps.Equal(before, after) {
		t.Error("the first checkpoint's workspace changed")
	}
	if err := os.Remove(filepath.Join(base, "run1", "checkpoint-500", "config.json")); err != nil {
		t.Fatal(err)
	}
	if mode, err := Classify(root, second, secondFiles); err != nil || mode != report.ModeGenerated {
		t.Errorf("after the first checkpoint is gone: %s, %v", mode, err)
	}
}
