package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/internal/testenv"
)

// TestBatchOnAFullDisk: on a real tmpfs filled to several levels, a batch
// either replaces every file or leaves every one as it was, with no
// temporary left behind.
func TestBatchOnAFullDisk(t *testing.T) {
	dir := testenv.Tmpfs(t, 1<<20)
	names := []string{"report.json", "report.md", "inputs.json"}
	old := map[string][]byte{}
	for _, n := range names {
		old[n] = []byte("old " + n + "\n")
		if err := os.WriteFile(filepath.Join(dir, n), old[n], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	content := bytes.Repeat([]byte("x"), 20<<10)
	for _, free := range []int64{0, 8 << 10, 24 << 10, 48 << 10, 96 << 10} {
		testenv.FillTo(t, dir, free)
		var b Batch
		var err error
		for _, n := range names {
			if err = b.Add(filepath.Join(dir, n), content); err != nil {
				break
			}
		}
		if err == nil {
			err = b.Commit()
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.Contains(e.Name(), ".tmp-") {
				t.Errorf("%d KiB free: temporary %s left", free>>10, e.Name())
			}
		}
		replaced := 0
		for _, n := range names {
			got, _ := os.ReadFile(filepath.Join(dir, n))
			switch {
			case bytes.Equal(got, content):
				replaced++
			case !bytes.Equal(got, old[n]):
				t.Errorf("%d KiB free: %s holds neither the old nor the new content (%d bytes)", free>>10, n, len(got))
			}
		}
		if err != nil && replaced != 0 || err == nil && replaced != len(names) {
			t.Errorf("%d KiB free: err %v, %d of %d files replaced; want all or none", free>>10, err, replaced, len(names))
		}
		if want := free >= 64<<10; (err == nil) != want {
			t.Errorf("%d KiB free: err %v", free>>10, err)
		}
		if err == nil {
			for _, n := range names { // the next level starts from the old record
				os.WriteFile(filepath.Join(dir, n), old[n], 0o644)
			}
		}
	}
}

func TestBatchRemoveAndAbort(t *testing.T) {
	dir := t.TempDir()
	a, gone := filepath.Join(dir, "a"), filepath.Join(dir, "gone")
	os.WriteFile(a, []byte("old"), 0o600)
	os.WriteFile(gone, []byte("stale"), 0o644)
	var b Batch
	if err := b.Add(a, []byte("new")); err != nil {
		t.Fatal(err)
	}
	b.Remove(gone)
	b.Abort()
	if got, _ := os.ReadFile(a); string(got) != "old" {
		t.Errorf("aborted batch changed a: %q", got)
	}
	if _, err := os.Stat(gone); err != nil {
		t.Errorf("aborted batch removed a file: %v", err)
	}
	if err := b.Add(a, []byte("new")); err != nil {
		t.Fatal(err)
	}
	b.Remove(gone)
	b.Remove(filepath.Join(dir, "never-was"))
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(a)
	if got, _ := os.ReadFile(a); string(got) != "new" || st.Mode().Perm() != 0o600 {
		t.Errorf("a = %q, mode %v", got, st.Mode().Perm())
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("gone still there: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries left, want 1", len(entries))
	}
}

func TestCheckNameAndDirWritable(t *testing.T) {
	if err := CheckName("/x/" + strings.Repeat("n", 239)); err != nil {
		t.Errorf("239 bytes: %v", err)
	}
	if err := CheckName("/x/" + strings.Repeat("n", 240)); err == nil || !strings.Contains(err.Error(), "240 bytes long") {
		t.Errorf("240 bytes: %v", err)
	}
	ro := testenv.Tmpfs(t, 64<<10, "ro")
	if err := CheckDirWritable(filepath.Join(ro, "a", "b")); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("read-only tmpfs: %v", err)
	}
	if err := CheckDirWritable(filepath.Join(t.TempDir(), "a", "b")); err != nil {
		t.Errorf("writable: %v", err)
	}
}
