package reference

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/internal/testenv"
	"phase0/read/fingerprint"
)

// TestReusableWithoutRecording: an empty folder has nothing to reuse and
// nothing to explain; a folder whose meta is unreadable says why.
func TestReusableWithoutRecording(t *testing.T) {
	if rec, why := Reusable(t.TempDir(), Key{}, "abc"); rec != nil || why != nil {
		t.Errorf("empty folder: %v, %q", rec, why)
	}
}

// TestFindings: another key and each prompt's first non-finite step are
// findings; a clean recording for its key has none.
func TestFindings(t *testing.T) {
	got := &Recording{Meta: Meta{KeySHA256: "k1"}, Prompts: []Prompt{{Text: "a", Nonfinite: []int64{0, 2, 3}}, {Text: "b", Nonfinite: []int64{0, 0}}}}
	f := Findings(got, "k2")
	if len(f) != 2 || !strings.Contains(f[0], "key k1 is not the key it was asked for (k2)") || f[1] != `prompt 0 "a": 2 non-finite logits at step 1` {
		t.Errorf("findings %q", f)
	}
	got.Prompts[0].Nonfinite = nil
	if f := Findings(got, "k1"); len(f) != 0 {
		t.Errorf("clean recording: %q", f)
	}
}

// TestWriteSourcesOnAFullDiskLeavesNoStaleStamp: on a real full tmpfs the
// new stamp cannot be written; the previous recording's is removed, so it
// cannot vouch for the new recording beside it (the next run records anew).
func TestWriteSourcesOnAFullDiskLeavesNoStaleStamp(t *testing.T) {
	dir := testenv.Tmpfs(t, 1<<20)
	old := fingerprint.Sources{Names: []string{"old"}}
	if err := WriteSources(dir, old); err != nil {
		t.Fatal(err)
	}
	testenv.FillTo(t, dir, 0)
	big := fingerprint.Sources{Names: []string{strings.Repeat("n", 64<<10)}}
	err := WriteSources(dir, big)
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("error %v, want no space left", err)
	}
	if _, err := os.Stat(filepath.Join(dir, SourcesFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the previous recording's %s is left beside a new recording (%v)", SourcesFile, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left %d entries, want the filler alone: %v", len(entries), entries)
	}
	if err := sourcesUnchanged(dir); err == nil {
		t.Error("a recording without its stamp counts as unchanged")
	}
}
