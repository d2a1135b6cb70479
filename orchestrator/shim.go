package orchestrator

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"phase0/pyshim"
)

// shimDir returns a folder holding phase0_shim. PHASE0_PYSHIM (or
// Settings.PyShimDir) points at a working copy; otherwise the copy built
// into the binary is unpacked once per content hash under the user cache.
func (s *Settings) shimDir() (string, error) {
	if s.PyShimDir != "" {
		return s.PyShimDir, nil
	}
	h := sha256.New()
	err := fs.WalkDir(pyshim.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := pyshim.FS.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("reading the built-in phase0_shim: %w", err)
	}
	cache, err := s.cacheRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "pyshim-"+hex.EncodeToString(h.Sum(nil))[:12])
	if _, err := os.Stat(filepath.Join(dir, "phase0_shim", "ops.py")); err == nil {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(cache, ".pyshim-*")
	if err != nil {
		return "", fmt.Errorf("unpacking phase0_shim: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.CopyFS(tmp, pyshim.FS); err != nil {
		return "", fmt.Errorf("unpacking phase0_shim into %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "phase0_shim", "ops.py")); statErr == nil {
			return dir, nil // another phase0 unpacked the same content first
		}
		return "", fmt.Errorf("unpacking phase0_shim into %s: %w", dir, err)
	}
	return dir, nil
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
