package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A child copy of this test binary starts writing ATOMICFILE_TEST_HANG and
// never finishes, so the parent can kill it mid-write.
func TestMain(m *testing.M) {
	if path := os.Getenv("ATOMICFILE_TEST_HANG"); path != "" {
		_ = WriteWith(path, func(f *os.File) error {
			fmt.Println("filling")
			time.Sleep(time.Hour)
			return nil
		})
		os.Exit(3)
	}
	os.Exit(m.Run())
}

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

// TestSweepStaleAfterKill: a writer killed between creating its temporary
// file and renaming it leaves .NAME.tmp-N behind; SweepStale removes it and
// nothing else.
func TestSweepStaleAfterKill(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "docs", "phase0")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "ATOMICFILE_TEST_HANG="+filepath.Join(sub, "report.json"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "filling\n" {
		cmd.Process.Kill()
		t.Fatalf("child: %q, %v", line, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	left, _ := filepath.Glob(filepath.Join(sub, ".report.json.tmp-*"))
	if len(left) != 1 {
		t.Fatalf("the killed writer left %v, want one temporary file", left)
	}
	keep := []string{filepath.Join(dir, ".notes.tmp-draft"), filepath.Join(dir, "plain.tmp-1"), filepath.Join(dir, "README.md")}
	for _, p := range keep {
		if err := os.WriteFile(p, []byte("user\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// A cutoff before the temporary file was written keeps it (a live writer's).
	if removed, err := SweepStale(dir, time.Now().Add(-time.Hour), 3); err != nil || len(removed) != 0 {
		t.Fatalf("sweep with an old cutoff removed %v (%v)", removed, err)
	}
	removed, err := SweepStale(dir, time.Now().Add(time.Second), 3)
	if err != nil || len(removed) != 1 || removed[0] != left[0] {
		t.Fatalf("sweep removed %v (%v), want %v", removed, err, left)
	}
	for _, p := range keep {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("sweep removed %s, which is not a temporary file of ours", p)
		}
	}
}
