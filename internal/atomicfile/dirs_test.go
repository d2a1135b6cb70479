package atomicfile

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestMkdirTrackedUndo: the folders made are listed outermost first, and
// RemoveCreated takes the innermost whole and the others only when empty.
func TestMkdirTrackedUndo(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "a", "b", "ws")
	made, err := MkdirTracked(ws)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(root, "a"), filepath.Join(root, "a", "b"), ws}; !slices.Equal(made, want) {
		t.Fatalf("made %v, want %v", made, want)
	}
	if err := os.WriteFile(filepath.Join(ws, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "a", "other"), 0o755); err != nil {
		t.Fatal(err)
	}
	RemoveCreated(made)
	if _, err := os.Stat(filepath.Join(root, "a", "b")); !os.IsNotExist(err) {
		t.Errorf("a/b stayed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "a", "other")); err != nil {
		t.Errorf("a folder another run made beside it went: %v", err)
	}
}
