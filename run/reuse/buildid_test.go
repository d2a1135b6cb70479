package reuse

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStampExecutable: a rebuilt-identical binary (same bytes, new mtime and
// inode) keeps its stamp; a different binary or a non-ELF file does not.
func TestStampExecutable(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	orig := StampExecutable(self)
	if orig.SHA256 == "" || orig.MTime != 0 {
		t.Fatalf("stamp of the test binary %+v, want its build ID hash", orig)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(t.TempDir(), "phase0")
	if err := os.WriteFile(copyPath, data, 0o755); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(copyPath, later, later); err != nil {
		t.Fatal(err)
	}
	if got := StampExecutable(copyPath); got != orig {
		t.Errorf("identical binary with a new mtime: %+v, want %+v", got, orig)
	}
	script := filepath.Join(t.TempDir(), "phase0")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho phase0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := StampExecutable(script); got.SHA256 != "" || got.MTime == 0 || got == orig {
		t.Errorf("a non-ELF executable: %+v, want a metadata stamp", got)
	}
}
