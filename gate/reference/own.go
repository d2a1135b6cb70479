package reference

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"phase0/internal/atomicfile"
	"phase0/internal/boundedfile"
	"phase0/read/fingerprint"
	"phase0/read/safetensors"
)

// ErrWrite is in the chain of every error that says a recording could not
// be written (errors.Is): a full disk, a folder that refuses a file, a file
// of a recording's name that phase0 did not write. It says nothing about
// the model.
var ErrWrite = errors.New("the reference could not be written")

// Files are the names a recording of phase0's writes into its folder, in
// the order Commit moves them in.
var Files = []string{TensorsFile, MetaFile, SourcesFile}

// CheckReplaceable says why a recording must not be written into dir: a
// file there of one of Files' names that is not, whole, the file phase0
// writes — an empty one (a shell redirect makes such a file), a
// reference.json ReadMeta refuses, a safetensors file whose metadata does
// not name Format, a sources.json that is not exactly the stamp's object —
// which writing would destroy. A missing file, or one phase0 wrote, may be
// replaced.
func CheckReplaceable(dir string) error {
	for _, name := range Files {
		path := filepath.Join(dir, name)
		fi, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fmt.Errorf("%w: %w", ErrWrite, err)
		case !fi.Mode().IsRegular():
			return fmt.Errorf("%w: %s exists and is not a regular file (%s): name another folder, or move it", ErrWrite, path, fi.Mode().Type())
		case fi.Size() == 0:
			return fmt.Errorf("%w: %s exists and is empty, not a file phase0 wrote: it is never overwritten; name another folder, or remove it first", ErrWrite, path)
		}
		if why := notOwn(dir, name); why != "" {
			return fmt.Errorf("%w: %s exists and phase0 did not write it (%s): it is never overwritten; name another folder, or move the file", ErrWrite, path, why)
		}
	}
	return nil
}

// notOwn says why dir's file name is not one phase0 wrote ("" when it is).
func notOwn(dir, name string) string {
	path := filepath.Join(dir, name)
	switch name {
	case MetaFile:
		if _, err := ReadMeta(dir); err != nil {
			return err.Error()
		}
	case TensorsFile:
		f, err := os.Open(path)
		if err != nil {
			return err.Error()
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err.Error()
		}
		h, err := safetensors.ReadHeader(f, fi.Size(), name)
		if err != nil {
			return err.Error()
		}
		if got := h.Metadata["format"]; got != Format {
			return fmt.Sprintf("its metadata names format %q, want %q", got, Format)
		}
	case SourcesFile:
		data, err := boundedfile.Read(path, maxSourcesBytes)
		if err != nil {
			return err.Error()
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(data, &got); err != nil {
			return "not a JSON object"
		}
		empty, _ := json.Marshal(fingerprint.Sources{})
		var want map[string]json.RawMessage
		_ = json.Unmarshal(empty, &want)
		if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
			return fmt.Sprintf("keys %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
		var s fingerprint.Sources
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return err.Error()
		}
	}
	return ""
}

// CheckFolder says why dir (reference's --out) cannot take a recording: a
// read-only or full filesystem, a file in the folder's place
// (atomicfile.CheckDirWritable), or a recording's file phase0 did not
// write there (CheckReplaceable).
func CheckFolder(dir string) error {
	if err := atomicfile.CheckDirWritable(dir); err != nil {
		return err
	}
	return CheckReplaceable(dir)
}
