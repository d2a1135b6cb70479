package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// MkdirTemp is os.MkdirTemp whose folder takes the mode a folder made by
// os.Mkdir would (0777 less the umask: 0755 under the usual 0022), not
// 0700: it is renamed into place as a folder the user shares (a workspace,
// a record), and must look like any other they made.
func MkdirTemp(dir, pattern string) (string, error) {
	prefix, suffix, _ := strings.Cut(pattern, "*")
	for range 10000 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10)+suffix)
		err := os.Mkdir(name, 0o777)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("creating a temporary folder in %s: too many names taken", dir)
}
