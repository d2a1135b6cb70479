package scaffold

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"phase0/internal/boundedfile"
)

// Upstream's TODO.md and progress.md are read like every file phase0 is
// handed: a FIFO in their place is refused without blocking, and so is a
// document past the limit; a missing one is "".
func TestReadDocIsBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "TODO.md")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDoc(fifo); !errors.Is(err, boundedfile.ErrNotRegular) {
		t.Errorf("ReadDoc(a FIFO) = %v, want ErrNotRegular", err)
	}
	big := filepath.Join(dir, "progress.md")
	if err := os.WriteFile(big, make([]byte, maxDoc+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDoc(big); !errors.Is(err, boundedfile.ErrTooLarge) {
		t.Errorf("ReadDoc(%d bytes) = %v, want ErrTooLarge", maxDoc+1, err)
	}
	if text, err := ReadDoc(filepath.Join(dir, "absent.md")); text != "" || err != nil {
		t.Errorf("ReadDoc(missing) = %q, %v; want \"\", nil", text, err)
	}
}
