//go:build !linux

package safetensors

import (
	"errors"
	"os"
)

// mapRange is Linux-only; elsewhere Scan reads with pread.
func mapRange(*os.File, int64, int64) ([]byte, func(), error) {
	return nil, nil, errors.New("mmap not used on this platform")
}

func adviseSequential(*os.File) {}
