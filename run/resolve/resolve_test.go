package resolve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArgWithoutPython: what needs neither Python nor the hub is decided
// here; each refusal is ErrNoModel and says why.
func TestArgWithoutPython(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.json")
	if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := &Options{Getenv: func(string) string { return "" }}
	m, err := Arg(context.Background(), o, dir)
	if err != nil || m.Dir != dir || m.ID != dir || !m.Local {
		t.Errorf("a folder: %+v, %v", m, err)
	}
	// A folder reached through a symlink: the link names it (ID), every
	// stage reads the real folder (Dir).
	link := filepath.Join(t.TempDir(), "mymodel")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if m, err := Arg(context.Background(), o, link); err != nil || m.Dir != dir || m.ID != link || !m.Local {
		t.Errorf("a symlinked folder: %+v, %v; want Dir %s, ID %s", m, err, dir, link)
	}
	for _, tc := range []struct{ arg, want string }{
		{"", "no MODEL given"},
		{file, "is a file"},
		{"/no/such/model", "no such folder"},
		{"a/b/c", "no such folder"},
	} {
		if _, err := Arg(context.Background(), o, tc.arg); !errors.Is(err, ErrNoModel) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want ErrNoModel saying %q", tc.arg, err, tc.want)
		}
	}
}
