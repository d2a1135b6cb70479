package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// MkdirTracked is os.MkdirAll that returns the folders it created,
// outermost first.
func MkdirTracked(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		missing = append([]string{d}, missing...)
	}
	for i, d := range missing {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			RemoveCreated(missing[:i])
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil { // dir itself exists but is not a folder
		RemoveCreated(missing)
		return nil, err
	}
	return missing, nil
}

// RemoveCreated removes folders a run created (MkdirTracked's), outermost first in dirs:
// the innermost whole (the run's own workspace), the others only if empty
// (another run may have put its own workspace beside it).
func RemoveCreated(dirs []string) {
	for i := len(dirs) - 1; i >= 0; i-- {
		if i == len(dirs)-1 {
			os.RemoveAll(dirs[i])
		} else {
			os.Remove(dirs[i])
		}
	}
}
