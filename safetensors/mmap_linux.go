package safetensors

import (
	"errors"
	"os"
	"syscall"
)

// mapFile maps f read-only and tells the kernel it will be read front to back.
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, errors.New("cannot map this size")
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	_ = syscall.Madvise(b, syscall.MADV_SEQUENTIAL) // advice only
	return b, nil
}

func unmapFile(b []byte) { _ = syscall.Munmap(b) }
