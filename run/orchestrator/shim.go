package orchestrator

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"phase0/internal/boundedfile"
	"phase0/python/pyshim"
)

// shimDir returns a folder holding phase0_shim. PHASE0_PYSHIM (or
// Settings.PyShimDir) points at a working copy; otherwise the copy built
// into the binary is unpacked once per content hash under the user cache,
// and checked against the built-in copy on every use (see verifiedShim).
func (s *Settings) shimDir() (string, error) {
	dir, _, err := s.verifiedShim()
	return dir, err
}

// verifiedShim is shimDir, and why the unpacked copy was unpacked again
// ("" when it was intact, or is a working copy): pyshim.Unpacked.
func (s *Settings) verifiedShim() (dir, repaired string, err error) {
	if s.PyShimDir != "" {
		if err := CheckPyShim(s.PyShimDir); err != nil {
			return "", "", err
		}
		return s.PyShimDir, "", nil
	}
	cache, err := s.cacheRoot()
	if err != nil {
		return "", "", err
	}
	return pyshim.Unpacked(cache)
}

// CheckPyShim refuses a pyshim setting (PHASE0_PYSHIM) that is not a
// folder holding the phase0_shim package: the worker would otherwise start,
// fail to import it, and the model be reported with "No module named
// 'phase0_shim'" instead of the setting.
func CheckPyShim(dir string) error {
	init := filepath.Join(dir, "phase0_shim", "__init__.py")
	st, err := os.Stat(init)
	if err == nil && st.Mode().IsRegular() {
		return nil
	}
	why := "it holds no phase0_shim/__init__.py"
	if d, derr := os.Stat(dir); derr != nil {
		why = "no such folder"
		if !errors.Is(derr, fs.ErrNotExist) {
			why = derr.Error()
		}
	} else if !d.IsDir() {
		why = "it is " + boundedfile.Kind(d.Mode()) + ", not a folder"
	}
	return fmt.Errorf("pyshim %s: %s; it must be a folder holding a working copy of the phase0_shim package (python/pyshim in phase0's repository), or unset PHASE0_PYSHIM for the copy built in", boundedfile.Quote(dir), why)
}

// cacheRoot is phase0's cache folder: the cache setting, else the user cache dir.
func (s *Settings) cacheRoot() (string, error) {
	dir := s.CacheDir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache folder: set PHASE0_CACHE: %w", err)
		}
		dir = filepath.Join(base, "phase0")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating cache folder %s: %w", dir, err)
	}
	return dir, nil
}
