package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesAndKeepsMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	if err := Write(p, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("two")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "two" || st.Mode().Perm() != 0o600 {
		t.Errorf("content %q mode %v", b, st.Mode().Perm())
	}
}

func TestFailedFillLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	if err := Write(p, []byte("old")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteWith(p, func(f *os.File) error {
		f.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	b, _ := os.ReadFile(p)
	entries, _ := os.ReadDir(dir)
	if string(b) != "old" || len(entries) != 1 {
		t.Errorf("content %q, %d entries (temporary file left?)", b, len(entries))
	}
}

// The file is replaced by rename: a reader holding the old file (here a hard
// link to it) still sees the old bytes, never a truncated mix.
func TestWriteReplacesByRename(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "f.py")
	if err := os.WriteFile(target, []byte("old content\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "old-link")
	if err := os.Link(target, link); err != nil {
		t.Fatalf("hard link: %v", err)
	}
	if err := Write(target, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != "new\n" {
		t.Errorf("target = %q", got)
	}
	if got, _ := os.ReadFile(link); string(got) != "old content\n" {
		t.Errorf("old inode was modified in place: %q", got)
	}
}

func TestFailedRenameLeavesNoTemporary(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "occupied")
	if err := os.MkdirAll(filepath.Join(target, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(target, []byte("data")); err == nil {
		t.Fatal("rename onto a non-empty directory succeeded")
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".occupied.tmp-*")); len(leftovers) != 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
}
