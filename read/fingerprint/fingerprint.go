// Package fingerprint identifies the files a verdict or a recording read,
// cheaply enough to check on every run and strictly enough that a changed
// input is never mistaken for an unchanged one.
//
// A file is stamped by what the kernel keeps about it — size, mtime, ctime,
// inode and device — and, when it is small, by its content. ctime cannot be
// set by touch or os.Chtimes: an in-place write whose mtime is restored, or a
// file swapped in by rename, still moves it. A path that is a link into the
// HF cache's blobs/ also carries the blob's name (the hub's hash of its
// content), so a re-pointed link is seen even if the new blob has the same
// size and times. What a stamp cannot see is a change whose ctime was forged
// (root, a debugger, a filesystem that does not keep ctime): `--fresh` is the
// escape.
//
// Verdict reuse (orchestrator) and the reference key (reference) both stamp
// the model folder through Tree, so the two can never disagree about whether
// the checkpoint changed.
package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// File is one file's stamp. Name is relative to the folder stamped (or the
// absolute path, for files gathered from many places).
type File struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	MTime  int64  `json:"mtime_ns"`
	CTime  int64  `json:"ctime_ns"`
	Inode  uint64 `json:"inode"`
	Dev    uint64 `json:"dev"`
	Blob   string `json:"blob,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Absent bool   `json:"absent,omitempty"`
	// Err is why a present file could not be stamped (unreadable): such a
	// stamp never equals a later one, so nothing is reused on its strength.
	Err string `json:"error,omitempty"`
}

// Limits bound the work of one stamp.
const (
	// MaxFiles bounds the files of one Tree (a model folder holds tens).
	MaxFiles = 20000
	// DefaultHashUpTo is the largest file hashed by content by default:
	// configs, indexes, prompts and sources; weights are stamped by metadata.
	DefaultHashUpTo = 4 << 20
)

// ErrTooMany means a folder holds more files than MaxFiles.
var ErrTooMany = errors.New("too many files to stamp")

// Stat stamps one file. A file at most hashUpTo bytes long is also hashed
// (hashUpTo < 0: never). A missing file is stamped Absent.
func Stat(path, name string, hashUpTo int64) File {
	f := File{Name: name}
	if li, err := os.Lstat(path); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		if target, err := os.Readlink(path); err == nil && strings.Contains(filepath.ToSlash(target), "/blobs/") {
			f.Blob = filepath.Base(target)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			f.Absent = true
		} else {
			f.Err = err.Error()
		}
		return f
	}
	f.Size, f.MTime = fi.Size(), fi.ModTime().UnixNano()
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		f.Inode, f.Dev = sys.Ino, uint64(sys.Dev)
		f.CTime = sys.Ctim.Sec*1e9 + sys.Ctim.Nsec
	}
	if fi.Mode().IsRegular() && hashUpTo >= 0 && fi.Size() <= hashUpTo {
		sum, err := hashFile(path, hashUpTo)
		if err != nil {
			f.Err = err.Error()
		}
		f.SHA256 = sum
	}
	return f
}

func hashFile(path string, limit int64) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(fh, limit+1))
	if err != nil {
		return "", err
	}
	if n > limit {
		return "", fmt.Errorf("%s grew past %d bytes while it was hashed", path, limit)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// TreeOptions say what Tree skips and hashes.
type TreeOptions struct {
	HashUpTo int64 // see Stat; 0 means DefaultHashUpTo
	// Skip names folders not descended into (besides .git and __pycache__,
	// which are always skipped: git's objects and Python's byte-code caches
	// are not inputs, and Python writes the latter during a run).
	Skip []string
	// Files, if set, keeps only the files it accepts (by their relative name).
	Files func(rel string) bool
}

// Tree stamps every file under root (links followed for files, not for
// folders below root; root itself may be reached through links), sorted by
// relative name. A missing root is an fs.ErrNotExist error.
func Tree(root string, opt TreeOptions) ([]File, error) {
	if opt.HashUpTo == 0 {
		opt.HashUpTo = DefaultHashUpTo
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	// A walk of a symlink sees the link alone: walk the folder it names.
	if root, err = filepath.EvalSymlinks(root); err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", root)
	}
	out := []File{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (d.Name() == ".git" || d.Name() == "__pycache__" || slices.Contains(opt.Skip, d.Name())) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if opt.Files != nil && !opt.Files(rel) {
			return nil
		}
		if len(out) == MaxFiles {
			return fmt.Errorf("%s: %w (more than %d)", root, ErrTooMany, MaxFiles)
		}
		out = append(out, Stat(path, rel, opt.HashUpTo))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Files stamps the given paths (named by themselves), sorted and deduplicated.
func Files(paths []string, hashUpTo func(path string) int64) []File {
	paths = slices.Clone(paths)
	slices.Sort(paths)
	paths = slices.Compact(paths)
	out := make([]File, 0, len(paths))
	for _, p := range paths {
		out = append(out, Stat(p, p, hashUpTo(p)))
	}
	return out
}

// Digest is one hash over a list of stamps (for keys that hold a digest,
// not the list).
func Digest(files []File) string {
	b, _ := json.Marshal(files) // strings and integers always encode
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Change names the first file added, removed or changed between two lists
// of stamps, or "" when they are equal. A stamp holding an error is always a
// change: it could not be compared.
func Change(what string, old, cur []File) string {
	_, why := diff(what, old, cur)
	return why
}

// diff is Change that also returns the name of the file that differs.
func diff(what string, old, cur []File) (string, string) {
	byName := make(map[string]File, len(old))
	for _, f := range old {
		byName[f.Name] = f
	}
	for _, f := range cur {
		o, ok := byName[f.Name]
		switch {
		case f.Err != "":
			return f.Name, fmt.Sprintf("%s %s could not be stamped (%s)", what, f.Name, f.Err)
		case !ok:
			return f.Name, fmt.Sprintf("%s %s is new", what, f.Name)
		case !o.Absent && f.Absent:
			return f.Name, fmt.Sprintf("%s %s was removed", what, f.Name)
		case o.Absent && !f.Absent:
			return f.Name, fmt.Sprintf("%s %s is new", what, f.Name)
		case o != f:
			return f.Name, fmt.Sprintf("%s %s changed (%s)", what, f.Name, differs(o, f))
		}
		delete(byName, f.Name)
	}
	for _, f := range old {
		if _, gone := byName[f.Name]; gone {
			return f.Name, fmt.Sprintf("%s %s was removed", what, f.Name)
		}
	}
	return "", ""
}

// differs names what moved between two stamps of one file, most telling first.
func differs(o, f File) string {
	switch {
	case o.SHA256 != f.SHA256:
		return "content"
	case o.Blob != f.Blob:
		return fmt.Sprintf("links to blob %s, was %s", short(f.Blob), short(o.Blob))
	case o.Size != f.Size:
		return fmt.Sprintf("size %d, was %d", f.Size, o.Size)
	case o.Inode != f.Inode || o.Dev != f.Dev:
		return "another file at that path"
	case o.MTime != f.MTime:
		return "modification time"
	case o.CTime != f.CTime:
		return "rewritten or its metadata changed: ctime moved although size and mtime did not"
	}
	return "stamp"
}

func short(s string) string { return s[:min(12, len(s))] }
