// Package atomicfile replaces files so that a reader, or a crash, sees the
// old content or the new one, never half a file.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"phase0/internal/boundedfile"
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

// isTemp reports whether name is one of WriteWith's temporary files:
// "." + base + ".tmp-" + the decimal suffix os.CreateTemp puts for "*".
func isTemp(name string) bool {
	i := strings.LastIndex(name, ".tmp-")
	if !strings.HasPrefix(name, ".") || i < 2 || i+len(".tmp-") == len(name) {
		return false
	}
	for _, r := range name[i+len(".tmp-"):] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// SweepStale removes WriteWith's temporary files left in dir and its
// sub-folders (down to depth levels) by a writer that died before renaming
// them, when they were last modified before cutoff. The caller must know
// no live writer uses them (it holds the folder's lock, or cutoff is older
// than any write still in progress). It returns the paths it removed.
func SweepStale(dir string, cutoff time.Time, depth int) ([]string, error) {
	var removed []string
	var errs []error
	var walk func(string, int)
	walk = func(d string, level int) {
		entries, err := os.ReadDir(d)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			return
		}
		for _, e := range entries {
			p := filepath.Join(d, e.Name())
			switch {
			case e.IsDir() && level < depth:
				walk(p, level+1)
			case e.Type().IsRegular() && isTemp(e.Name()):
				info, err := e.Info()
				if err != nil || !info.ModTime().Before(cutoff) {
					continue
				}
				if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, fmt.Errorf("removing stale temporary file: %w", err))
					continue
				}
				removed = append(removed, p)
			}
		}
	}
	walk(dir, 0)
	return removed, errors.Join(errs...)
}

// CheckWritable says whether Write(path, …) can succeed now, without
// changing anything a reader sees: path's folder must take a new file (one
// is created and removed) and an existing path must be a regular file that
// opens for writing (an immutable or read-only file, or a folder in its
// place, does not). A record of several files checks them all first, so
// that it writes all of them or none.
func CheckWritable(path string) error {
	if st, err := os.Lstat(path); err == nil {
		if !st.Mode().IsRegular() {
			return fmt.Errorf("cannot write %s: it is %s, not a regular file", path, boundedfile.Kind(st.Mode()))
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("cannot write %s: %w", path, err)
		}
		f.Close()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("cannot write %s: removing the probe %s: %w", path, name, err)
	}
	return nil
}
