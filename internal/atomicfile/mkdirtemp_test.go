package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMkdirTempFollowsTheUmask: under umask 0022 the folder is 0755 (os.MkdirTemp makes 0700),
// under 0077 it is 0700, and two calls never share a name.
func TestMkdirTempFollowsTheUmask(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		umask int
		want  os.FileMode
	}{{0o022, 0o755}, {0o077, 0o700}, {0o002, 0o775}} {
		old := syscall.Umask(tc.umask)
		a, errA := MkdirTemp(dir, ".ws.tmp-*")
		b, errB := MkdirTemp(dir, ".ws.tmp-*")
		syscall.Umask(old)
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if a == b || !strings.HasPrefix(filepath.Base(a), ".ws.tmp-") {
			t.Errorf("names %s, %s", a, b)
		}
		st, err := os.Stat(a)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != tc.want {
			t.Errorf("umask %#o: mode %#o, want %#o", tc.umask, got, tc.want)
		}
	}
}
