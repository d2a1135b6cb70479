// Package atomicfile replaces files so that a reader, or a crash, sees the
// old content or the new one, never half a file.
package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteWith runs fill on a temporary file next to path, syncs it, gives it
// path's current permissions (0644 for a new file) and renames it over path.
// On any error the temporary file is removed and path is untouched.
func WriteWith(path string, fill func(*os.File) error) (err error) {
	perm := fs.FileMode(0o644)
	if st, statErr := os.Stat(path); statErr == nil {
		perm = st.Mode().Perm()
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	if err = fill(f); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	// Make the rename itself durable; not every filesystem can sync a directory.
	if d, dirErr := os.Open(dir); dirErr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Write replaces path with data.
func Write(path string, data []byte) error {
	return WriteWith(path, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}
