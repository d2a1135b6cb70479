package hfcache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// Files phase0 needs from a snapshot, besides the weights.
const (
	ConfigFile          = "config.json"
	SafetensorsFile     = "model.safetensors"
	SafetensorsIndex    = "model.safetensors.index.json"
	TokenizerConfigFile = "tokenizer_config.json"
	TokenizerJSONFile   = "tokenizer.json"
)

// Bounds on files read from the cache: a ref is a 40-byte sha, and an index
// of even the largest checkpoints is a few MB.
const (
	maxRefBytes   = 1 << 10
	maxIndexBytes = 64 << 20
)

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

	indexPath := filepath.Join(dir, SafetensorsIndex)
	switch {
	case isFile(indexPath):
		shards, err := indexShards(indexPath)
		if err != nil {
			return nil, err
		}
		for _, s := range shards {
			need(s)
		}
	case isLink(indexPath):
		missing = append(missing, SafetensorsIndex)
	default:
		need(SafetensorsFile)
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

// indexShards returns the sorted, distinct shard names of a safetensors index.
// A shard name that would leave the snapshot folder is refused.
func indexShards(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read index: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxIndexBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read index %s: %w", path, err)
	}
	if len(b) > maxIndexBytes {
		return nil, fmt.Errorf("%w: index %s is larger than %d bytes", ErrCorruptCache, path, maxIndexBytes)
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &index); err != nil {
		return nil, fmt.Errorf("%w: index %s: %w", ErrCorruptCache, path, err)
	}
	if len(index.WeightMap) == 0 {
		return nil, fmt.Errorf("%w: index %s has an empty or absent \"weight_map\"", ErrCorruptCache, path)
	}
	var shards []string
	for tensor, shard := range index.WeightMap {
		if !filepath.IsLocal(shard) || strings.Contains(shard, `\`) {
			return nil, fmt.Errorf("%w: index %s maps tensor %q to shard %q, which leaves the model folder", ErrCorruptCache, path, tensor, shard)
		}
		shards = append(shards, filepath.Clean(shard))
	}
	slices.Sort(shards)
	return slices.Compact(shards), nil
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
