package hfcache

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"phase0/read/safetensors"
)

var (
	// ErrNotCached: the repository, the ref or the snapshot is not in the cache.
	ErrNotCached = errors.New("model not in the hub cache")
	// ErrBadRevision: the revision cannot name a ref or a commit.
	ErrBadRevision = errors.New("bad revision")
	// ErrCorruptCache: a cache file is not what huggingface_hub writes there.
	ErrCorruptCache = errors.New("damaged hub cache entry")
)

// DefaultRevision is the ref huggingface_hub uses when none is given.
const DefaultRevision = "main"

// Files phase0 needs from a snapshot, besides the weights (whose names,
// and the index's, package safetensors owns).
const (
	ConfigFile          = "config.json"
	TokenizerConfigFile = "tokenizer_config.json"
	TokenizerJSONFile   = "tokenizer.json"
)

// maxRefBytes bounds a ref file, which holds a 40-byte sha.
const maxRefBytes = 1 << 10

// Resolved is a snapshot folder found in the cache for a Ref.
type Resolved struct {
	Dir      string // <cache>/models--org--name/snapshots/<sha>
	Revision string // the commit sha
	Ref      Ref
	Missing  []string // required files absent from Dir (or dangling links)
}

// Complete reports whether every required file is present.
func (r Resolved) Complete() bool { return len(r.Missing) == 0 }

// Resolve finds ref in the hub cache at cacheDir without touching the network:
// refs/<revision or main> gives the commit sha (a 40-hex revision is the sha
// itself) and snapshots/<sha>/ is the model folder. The snapshot's files are
// symlinks into blobs/; a dangling link counts as a missing file.
func Resolve(cacheDir string, ref Ref) (Resolved, error) {
	if _, _, err := splitRepoID(ref.ID); err != nil {
		return Resolved{}, fmt.Errorf("%w %q: %w", ErrInvalidID, ref.ID, err)
	}
	rev := ref.Revision
	if rev == "" {
		rev = DefaultRevision
	}
	if err := checkRevision(rev); err != nil {
		return Resolved{}, fmt.Errorf("%w for %s: %w", ErrBadRevision, ref.ID, err)
	}
	if abs, err := filepath.Abs(cacheDir); err == nil {
		cacheDir = abs
	}
	repoDir := filepath.Join(cacheDir, ref.FolderName())
	if !isDir(repoDir) {
		return Resolved{}, fmt.Errorf("%w: %s has no folder %s", ErrNotCached, ref.ID, repoDir)
	}

	sha := rev
	if !isCommitSHA(rev) {
		var err error
		if sha, err = readRef(filepath.Join(repoDir, "refs", filepath.FromSlash(rev))); err != nil {
			return Resolved{}, fmt.Errorf("%s revision %q: %w", ref.ID, rev, err)
		}
	}
	dir := filepath.Join(repoDir, "snapshots", sha)
	if !isDir(dir) {
		return Resolved{}, fmt.Errorf("%w: %s revision %q (commit %s) has no snapshot folder %s", ErrNotCached, ref.ID, rev, sha, dir)
	}
	missing, err := missingFiles(dir)
	if err != nil {
		return Resolved{}, fmt.Errorf("%s revision %q: %w", ref.ID, rev, err)
	}
	return Resolved{Dir: dir, Revision: sha, Ref: ref, Missing: missing}, nil
}

// isCommitSHA matches huggingface_hub's REGEX_COMMIT_HASH (lower-case only).
func isCommitSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func readRef(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: no ref file %s", ErrNotCached, path)
	}
	if err != nil {
		return "", fmt.Errorf("read ref: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRefBytes))
	if err != nil {
		return "", fmt.Errorf("read ref %s: %w", path, err)
	}
	sha := strings.TrimSpace(string(b))
	if !isCommitSHA(sha) {
		return "", fmt.Errorf("%w: ref file %s holds %.60q, want a 40-hex commit sha", ErrCorruptCache, path, sha)
	}
	return sha, nil
}

// missingFiles lists, in a stable order, the required files absent from dir:
// config.json, the safetensors weights (every shard the index names, or
// model.safetensors when there is no index) and the tokenizer (its config plus
// tokenizer.json, or a sentencepiece tokenizer.model, or BPE vocab.json+merges.txt).
func missingFiles(dir string) ([]string, error) {
	var missing []string
	need := func(name string) {
		if !isFile(filepath.Join(dir, name)) {
			missing = append(missing, name)
		}
	}
	need(ConfigFile)

	indexPath := filepath.Join(dir, safetensors.IndexFile)
	switch {
	case isFile(indexPath):
		// The index parser phase0 loads the model with, so the cache check
		// and the load cannot disagree about which shards exist.
		ix, err := safetensors.LoadIndex(os.DirFS(dir))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCorruptCache, err)
		}
		for _, s := range ix.Shards() {
			need(s)
		}
	case isLink(indexPath):
		missing = append(missing, safetensors.IndexFile)
	default:
		need(safetensors.SingleFile)
	}
	// A directory or pipe where a file belongs is damage, not absence:
	// reporting it as missing would send the user to download it again.
	for _, name := range append([]string{ConfigFile, safetensors.IndexFile, safetensors.SingleFile}, missing...) {
		if kind := irregular(filepath.Join(dir, name)); kind != "" {
			return nil, fmt.Errorf("%w: %s in %s is %s, not a regular file", ErrCorruptCache, name, dir, kind)
		}
	}

	// tokenizer_config.json is optional (AutoTokenizer works from tokenizer.json
	// alone, and the download fetches it only when the repo has one); a
	// dangling link to it still means an interrupted download.
	if p := filepath.Join(dir, TokenizerConfigFile); isLink(p) && !isFile(p) {
		missing = append(missing, TokenizerConfigFile)
	}
	hasVocab := isFile(filepath.Join(dir, TokenizerJSONFile)) ||
		isFile(filepath.Join(dir, "tokenizer.model")) ||
		isFile(filepath.Join(dir, "vocab.json")) && isFile(filepath.Join(dir, "merges.txt"))
	if !hasVocab {
		missing = append(missing, TokenizerJSONFile)
	}
	return missing, nil
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// isFile follows symlinks, so a link into blobs/ whose blob is gone is not a file.
func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

func isLink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}

// irregular names what path is when it exists (links followed) but is not a
// regular file, and is "" otherwise.
func irregular(path string) string {
	fi, err := os.Stat(path)
	switch {
	case err != nil || fi.Mode().IsRegular():
		return ""
	case fi.IsDir():
		return "a directory"
	case fi.Mode()&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case fi.Mode()&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}
