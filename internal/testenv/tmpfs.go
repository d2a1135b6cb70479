package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Tmpfs mounts a real tmpfs of size bytes (opts are extra mount options,
// e.g. "ro") on a new folder and unmounts it when the test ends: a full or
// read-only disk without a mock. Where mounting is not possible (not root,
// a container without CAP_SYS_ADMIN) the test is skipped, saying why.
func Tmpfs(t testing.TB, size int64, opts ...string) string {
	t.Helper()
	dir := t.TempDir()
	data := strings.Join(append([]string{fmt.Sprintf("size=%d", size), "mode=0755"}, opts...), ",")
	flags := uintptr(0)
	for _, o := range opts {
		if o == "ro" {
			flags |= unix.MS_RDONLY
		}
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", flags, data); err != nil {
		t.Skipf("SKIPPED, NOT TESTED: cannot mount a tmpfs on %s (%v): this test needs a real full (or read-only) filesystem, which takes root and mount(2)", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting the test's tmpfs %s: %v", dir, err)
		}
	})
	return dir
}

// Free is how many bytes an unprivileged writer can still put on dir's
// filesystem.
func Free(t testing.TB, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatalf("statfs %s: %v", dir, err)
	}
	return int64(st.Bavail) * st.Bsize
}

// FillTo leaves free bytes (rounded down to the filesystem's block) free on
// dir's filesystem, with a filler file in dir; 0 fills it.
func FillTo(t testing.TB, dir string, free int64) {
	t.Helper()
	filler := filepath.Join(dir, ".test-filler")
	f, err := os.OpenFile(filler, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatalf("filler: %v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	size := st.Size() + Free(t, dir) - free
	if size < 0 {
		t.Fatalf("%s has %d bytes free, fewer than the %d asked for", dir, Free(t, dir), free)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatalf("filler: %v", err)
	}
	if size > st.Size() {
		if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
			t.Fatalf("filling %s to %d bytes free: %v", dir, free, err)
		}
	}
	if got := Free(t, dir); got > free+4096 || got < free-4096 {
		t.Fatalf("%s has %d bytes free after filling, want %d", dir, got, free)
	}
}
