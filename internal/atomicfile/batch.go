package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"phase0/internal/boundedfile"
)

// Batch replaces several files as one commit: every new content is first
// written and synced to a temporary file beside its path (Add), so a full
// disk or a refused folder fails before any path changes; Commit then only
// renames, which needs no new space. A batch that is not committed is
// aborted: its temporaries are removed and every path keeps its content.
type Batch struct {
	steps []step
}

type step struct {
	path, tmp string // tmp "" = remove path
}

// Add writes data to a temporary file beside path, to replace path on
// Commit. On error the batch's temporaries are all removed and nothing
// may be committed.
func (b *Batch) Add(path string, data []byte) error {
	perm := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		perm = st.Mode().Perm()
	}
	if err := CheckName(path); err != nil {
		b.Abort()
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		b.Abort()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	b.steps = append(b.steps, step{path: path, tmp: f.Name()})
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Abort()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Remove removes path on Commit (a missing path is fine).
func (b *Batch) Remove(path string) { b.steps = append(b.steps, step{path: path}) }

// Staged is one temporary written by Add and the path it replaces.
type Staged struct {
	Tmp  string `json:"tmp"`
	Path string `json:"path"`
}

// Staged lists the temporaries written so far, in order, with their paths.
func (b *Batch) Staged() []Staged {
	var out []Staged
	for _, s := range b.steps {
		if s.tmp != "" {
			out = append(out, Staged{Tmp: s.tmp, Path: s.path})
		}
	}
	return out
}

// Release hands the batch's temporaries to the caller (a journal that
// renames them): the batch forgets them, neither renamed nor removed.
func (b *Batch) Release() { b.steps = nil }

// Abort removes the temporaries written so far; no path is changed.
func (b *Batch) Abort() {
	for _, s := range b.steps {
		if s.tmp != "" {
			os.Remove(s.tmp)
		}
	}
	b.steps = nil
}

// Commit renames every temporary over its path, and removes the paths
// marked for removal, in the order they were added. A rename cannot run
// out of space; should one fail anyway (a path became a folder meanwhile),
// the paths before it are already replaced, the rest are not: the error
// names the first that was not, and the caller marks its record as
// incomplete.
func (b *Batch) Commit() error {
	steps := b.steps
	b.steps = nil
	dirs := map[string]bool{}
	for i, s := range steps {
		var err error
		if s.tmp == "" {
			if err = os.Remove(s.path); errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		} else {
			err = os.Rename(s.tmp, s.path)
		}
		if err != nil {
			(&Batch{steps: steps[i:]}).Abort()
			return fmt.Errorf("committing %s: %w", s.path, err)
		}
		dirs[filepath.Dir(s.path)] = true
	}
	// Make the renames durable; not every filesystem can sync a directory.
	for dir := range dirs {
		if d, err := os.Open(dir); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	return nil
}

// maxName is the longest file name (in bytes) Linux filesystems take.
const maxName = 255

// tempOverhead is how much longer than a file's name its temporary's is:
// "." + name + ".tmp-" + os.CreateTemp's up to 10-digit suffix.
const tempOverhead = len(".") + len(".tmp-") + 10

// CheckName says whether path's file name is short enough for Write (whose
// temporary's name is longer than the file's): checked before anything is
// created, so a name that is too long fails with nothing on disk.
func CheckName(path string) error {
	name := filepath.Base(path)
	if n := len(name) + tempOverhead; n > maxName {
		return fmt.Errorf("file name %q is %d bytes long: at most %d fit (its temporary's name adds %d to the filesystem's limit of %d)",
			name, len(name), maxName-tempOverhead, tempOverhead, maxName)
	}
	return nil
}

// CheckDirWritable says whether files can be created in dir, without
// creating dir: its nearest existing ancestor must be a folder that takes a
// new file (a probe is created and removed there). It catches a read-only
// or full filesystem before a long computation whose result goes there.
func CheckDirWritable(dir string) error {
	d := dir
	for {
		st, err := os.Stat(d)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("cannot write into %s: %s is %s, not a folder", dir, d, boundedfile.Kind(st.Mode()))
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot write into %s: %w", dir, err)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return fmt.Errorf("cannot write into %s: %w", dir, err)
		}
		d = parent
	}
	f, err := os.CreateTemp(d, ".phase0-probe.tmp-*")
	if err != nil {
		return fmt.Errorf("cannot write into %s: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("cannot write into %s: removing the probe %s: %w", dir, name, err)
	}
	return nil
}
