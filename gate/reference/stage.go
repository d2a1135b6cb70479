package reference

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"phase0/internal/atomicfile"
	"phase0/read/fingerprint"
)

// stagingPrefix names a recording's staging folder inside its reference
// folder (".recording.tmp-N", an atomicfile temporary).
const stagingPrefix = ".recording.tmp-"

// Staging is a recording being made: the recorder writes reference.safetensors
// and reference.json into Dir, a new folder inside the reference folder
// Into, the sources stamp is written beside them, and only then Commit
// moves the three into Into — renames, which need no space. A disk that
// fills or a folder that refuses a file fails while staging, and the
// previous recording in Into stays whole (docs/reference.md).
type Staging struct{ Dir, Into string }

// Stage makes into (when missing) and a staging folder in it, after
// checking that the recording may replace what into holds
// (CheckReplaceable); the staging folders a killed run left there are
// removed first. Every error is ErrWrite's.
func Stage(into string) (*Staging, error) {
	if err := os.MkdirAll(into, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrWrite, err)
	}
	if err := CheckReplaceable(into); err != nil {
		return nil, err
	}
	left, _ := filepath.Glob(filepath.Join(into, stagingPrefix+"*"))
	for _, d := range left {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() && atomicfile.IsTemp(filepath.Base(d)) {
			os.RemoveAll(d)
		}
	}
	dir, err := os.MkdirTemp(into, stagingPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("%w: staging the recording in %s: %w", ErrWrite, into, err)
	}
	return &Staging{Dir: dir, Into: into}, nil
}

// WriteSources stamps what the staged recording ran (SourcesFile).
func (s *Staging) WriteSources(sources fingerprint.Sources) error {
	if err := writeSources(filepath.Join(s.Dir, SourcesFile), sources); err != nil {
		return fmt.Errorf("%w: %w", ErrWrite, s.named(err))
	}
	return nil
}

// Commit moves the staged recording into Into: the previous recording's
// sources stamp is removed first, then the tensors, the metadata and the
// new stamp are renamed in, in that order, so a kill between two renames
// leaves a folder no later run reuses (a tensors file its reference.json
// does not name, or no stamp), and the staging folder goes. A file of
// Files' names that appeared in Into since Stage and that phase0 did not
// write is refused.
func (s *Staging) Commit() error {
	defer s.Discard()
	if err := CheckReplaceable(s.Into); err != nil {
		return err
	}
	for _, name := range Files {
		if _, err := os.Stat(filepath.Join(s.Dir, name)); err != nil {
			return fmt.Errorf("%w: the staged recording has no %s: %w", ErrWrite, name, s.named(err))
		}
	}
	if err := os.Remove(filepath.Join(s.Into, SourcesFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %w", ErrWrite, err)
	}
	for _, name := range Files {
		if err := os.Rename(filepath.Join(s.Dir, name), filepath.Join(s.Into, name)); err != nil {
			return fmt.Errorf("%w: %w", ErrWrite, s.named(err))
		}
	}
	atomicfile.SyncDir(s.Into)
	return nil
}

// Discard removes the staging folder and what it holds.
func (s *Staging) Discard() { os.RemoveAll(s.Dir) }

// Named is msg, a message that names the staged files, naming the files
// of the reference folder they become instead.
func (s *Staging) Named(msg string) string { return replacePath(msg, s.Dir, s.Into) }

func (s *Staging) named(err error) error { return errors.New(s.Named(err.Error())) }

// replacePath is msg with the path from (and what lies under it) named as
// under to.
func replacePath(msg, from, to string) string { return strings.ReplaceAll(msg, from, to) }

// Read reads the staged recording back (Read), as the recording of Into it
// becomes, its errors naming Into's files.
func (s *Staging) Read() (*Recording, error) {
	r, err := Read(s.Dir)
	if err != nil {
		return nil, s.named(err)
	}
	r.Dir = s.Into
	return r, nil
}
