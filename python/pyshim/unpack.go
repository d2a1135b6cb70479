package pyshim

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"phase0/internal/boundedfile"
)

// Unpacked is a folder under cache holding the copy of phase0_shim built
// into the binary, unpacked once per content hash, and why it was unpacked
// again ("" when it was intact): every file of the copy (the prompts and
// data files too, not only the .py) must be byte for byte the binary's, and
// nothing else may be there but Python's __pycache__; an edited, added or
// removed file is replaced by a fresh unpacking, never used.
func Unpacked(cache string) (dir, repaired string, err error) {
	files, digest, err := builtin()
	if err != nil {
		return "", "", err
	}
	dir = filepath.Join(cache, "pyshim-"+digest[:12])
	why := differs(dir, files)
	if why == "" {
		return dir, "", nil
	}
	if _, err := os.Stat(dir); err == nil {
		repaired = fmt.Sprintf("the unpacked phase0_shim in %s was not phase0's (%s): unpacked again", dir, why)
	}
	if err := unpack(cache, dir, files); err != nil {
		return "", "", err
	}
	return dir, repaired, nil
}

// builtin reads the shim embedded in the binary: each file by its path,
// and a digest of them all (names and bytes).
func builtin() (map[string][]byte, string, error) {
	files := map[string][]byte{}
	h := sha256.New()
	err := fs.WalkDir(FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := FS.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		files[path] = b
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("reading the built-in phase0_shim: %w", err)
	}
	return files, hex.EncodeToString(h.Sum(nil)), nil
}

// differs names the first way dir differs from the built-in files ("" when
// it holds exactly them; __pycache__ folders are Python's and ignored).
func differs(dir string, files map[string][]byte) string {
	seen := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return nil
		}
		want, ok := files[rel]
		if !ok {
			return fmt.Errorf("%s is not phase0's", rel)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", rel)
		}
		got, err := boundedfile.Read(path, int64(len(want)))
		if err != nil || !bytes.Equal(got, want) {
			return fmt.Errorf("%s differs from the built-in copy", rel)
		}
		seen++
		return nil
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "missing"
	case err != nil:
		return err.Error()
	case seen != len(files):
		return fmt.Sprintf("%d of its %d files are missing", len(files)-seen, len(files))
	}
	return ""
}

// unpack writes files into a temporary folder and renames it to dir; a
// copy already at dir (one that failed the check) is first moved aside and
// removed. Another phase0 may unpack the same content at the same time:
// whichever rename lands, the content is the binary's.
func unpack(cache, dir string, files map[string][]byte) error {
	tmp, err := os.MkdirTemp(cache, ".pyshim-*")
	if err != nil {
		return fmt.Errorf("unpacking phase0_shim: %w", err)
	}
	defer os.RemoveAll(tmp)
	for rel, b := range files {
		path := filepath.Join(tmp, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("unpacking phase0_shim into %s: %w", tmp, err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return fmt.Errorf("unpacking phase0_shim into %s: %w", tmp, err)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		stale, err := os.MkdirTemp(cache, ".pyshim-stale-*")
		if err != nil {
			return fmt.Errorf("moving the altered %s aside: %w", dir, err)
		}
		defer os.RemoveAll(stale)
		os.Remove(stale) // os.Rename does not replace a folder, even an empty one
		if err := os.Rename(dir, stale); err != nil && differs(dir, files) != "" {
			return fmt.Errorf("moving the altered %s aside: %w", dir, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if differs(dir, files) == "" {
			return nil // another phase0 unpacked the same content first
		}
		return fmt.Errorf("unpacking phase0_shim into %s: %w", dir, err)
	}
	return nil
}
