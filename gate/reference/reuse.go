package reference

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"phase0/internal/atomicfile"
	"phase0/internal/boundedfile"
	"phase0/read/fingerprint"
)

// SourcesFile is the file, in a reference folder, that stamps the Python
// code the recording ran (the runner, what it imports, the workspace
// module, the installed packages): a recording whose key matches is reused
// only while all of it is unchanged.
const SourcesFile = "sources.json"

// maxSourcesBytes bounds sources.json.
const maxSourcesBytes = 64 << 20

// WriteSources records what the recording in dir ran (SourcesFile).
func WriteSources(dir string, sources fingerprint.Sources) error {
	return writeSources(filepath.Join(dir, SourcesFile), sources)
}

func writeSources(path string, sources fingerprint.Sources) error {
	js, err := json.MarshalIndent(sources, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(js, '\n')); err != nil {
		// The recording beside it is new: the previous recording's stamp
		// must not vouch for it (the next run records anew). Removing
		// needs no space.
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return fmt.Errorf("recording the reference's sources: %w (and the previous recording's %s could not be removed: %v)", err, path, rerr)
		}
		return fmt.Errorf("recording the reference's sources: %w", err)
	}
	return nil
}

// Reusable returns the recording in dir when it was made for the key whose
// digest is keySHA256 and the Python it ran is unchanged; otherwise nil and
// why it is recorded anew (nothing when dir holds no recording).
func Reusable(dir string, key Key, keySHA256 string) (*Recording, []string) {
	old, err := ReadMeta(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, []string{err.Error()}
	case old.KeySHA256 == keySHA256:
		rec, err := Read(dir)
		if err == nil {
			err = sourcesUnchanged(dir)
		}
		if err != nil {
			return nil, []string{err.Error()}
		}
		return rec, nil
	case old.Key != nil:
		return nil, old.Key.Diff(key)
	}
	return nil, []string{"the recording has no key"}
}

// sourcesUnchanged says why a recording's Python sources changed since it
// was made (nil when none did).
func sourcesUnchanged(dir string) error {
	var old fingerprint.Sources
	data, err := boundedfile.Read(filepath.Join(dir, SourcesFile), maxSourcesBytes)
	if err == nil {
		err = json.Unmarshal(data, &old)
	}
	if err != nil {
		return fmt.Errorf("the recording's %s is unreadable (%w)", SourcesFile, err)
	}
	if why := fingerprint.SourcesChange(old, old.Restamp()); why != "" {
		return errors.New(why)
	}
	return nil
}

// Findings lists what is wrong with a recording just made for the key whose
// digest is keySHA256: another key, or non-finite logits (the first step of
// each prompt that has any). None means it stands.
func Findings(got *Recording, keySHA256 string) []string {
	var out []string
	if got.Meta.KeySHA256 != keySHA256 {
		out = append(out, fmt.Sprintf("the recording's key %s is not the key it was asked for (%s)", got.Meta.KeySHA256, keySHA256))
	}
	for i, p := range got.Prompts {
		for s, n := range p.Nonfinite {
			if n > 0 {
				out = append(out, fmt.Sprintf("prompt %d %q: %d non-finite logits at step %d", i, p.Text, n, s))
				break
			}
		}
	}
	return out
}
