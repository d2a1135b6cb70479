//go:build !linux

package safetensors

import (
	"errors"
	"os"
)

// mapFile is Linux-only; elsewhere Scan reads with pread.
func mapFile(*os.File, int64) ([]byte, error) {
	return nil, errors.New("mmap not used on this platform")
}

func unmapFile([]byte) {}
