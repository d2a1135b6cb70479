package safetensors

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

var pageSize = int64(os.Getpagesize())

// mapRange maps the file bytes [begin, end) read-only. MAP_POPULATE fills
// the page tables in one call instead of one fault per page, which is what
// makes per-chunk mapping as fast as mapping the whole file once; unmapping
// drops the pages from the process's RSS (they stay in the page cache).
func mapRange(f *os.File, begin, end int64) ([]byte, func(), error) {
	off := begin &^ (pageSize - 1)
	n := end - off
	if n <= 0 || int64(int(n)) != n {
		return nil, nil, errors.New("cannot map this range")
	}
	m, err := unix.Mmap(int(f.Fd()), off, int(n), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, nil, err
	}
	return m[begin-off:], func() { _ = unix.Munmap(m) }, nil
}

// adviseSequential doubles the kernel's read-ahead window for f; advice only.
func adviseSequential(f *os.File) { _ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_SEQUENTIAL) }
