package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"

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
		if err := pyshim.CheckWorkingCopy(s.PyShimDir); err != nil {
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
