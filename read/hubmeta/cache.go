package hubmeta

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"phase0/internal/boundedfile"

	"phase0/internal/atomicfile"
	"phase0/read/hfcache"
	"phase0/read/safetensors"
)

// The metadata cache mirrors the hub cache's shape, for metadata only:
//
//	<cache>/hubmeta/models--org--name/refs/<branch or tag>   commit sha
//	<cache>/hubmeta/models--org--name/commits/<sha>/config.json
//	<cache>/hubmeta/models--org--name/commits/<sha>/model.safetensors.index.json
//	<cache>/hubmeta/models--org--name/commits/<sha>/headers/<shard>   8-byte length + header
//	<cache>/hubmeta/models--org--name/commits/<sha>/weights.json      manifest, written last
//
// Every file is written atomically and weights.json only after the files it
// lists, so its presence means the commit's metadata is complete. A commit
// never changes on the hub, so nothing under commits/ is ever refreshed.
type store struct{ dir string } // "" when caching is off

const manifestFile = "weights.json"

// manifest lists each safetensors file with its full size and the length
// of its cached prefix, so a truncated cache file is noticed.
type manifest struct {
	Sharded bool                     `json:"sharded"`
	Files   map[string]manifestEntry `json:"files"`
}

type manifestEntry struct {
	Size        int64 `json:"size"`
	HeaderBytes int64 `json:"header_bytes"`
}

func (c *Client) store(repoID string) store {
	if c.opt.CacheDir == "" {
		return store{}
	}
	return store{dir: filepath.Join(c.opt.CacheDir, "hubmeta", hfcache.Ref{ID: repoID}.FolderName())}
}

func (s store) commitDir(sha string) string { return filepath.Join(s.dir, "commits", sha) }

// ref returns the commit a branch or tag was last resolved to, "" if none.
func (s store) ref(rev string) string {
	if s.dir == "" {
		return ""
	}
	b, err := boundedfile.Read(filepath.Join(s.dir, "refs", filepath.FromSlash(rev)), 1<<10)
	if err != nil {
		return ""
	}
	sha := strings.TrimSpace(string(b))
	if !isCommit(sha) {
		return ""
	}
	return strings.ToLower(sha)
}

func (s store) putRef(rev, sha string) error {
	if s.dir == "" {
		return nil
	}
	return s.write(filepath.Join(s.dir, "refs", filepath.FromSlash(rev)), []byte(sha))
}

func (s store) config(sha string) ([]byte, error) {
	if s.dir == "" {
		return nil, fs.ErrNotExist
	}
	return boundedfile.Read(filepath.Join(s.commitDir(sha), hfcache.ConfigFile), maxConfigBytes)
}

func (s store) putConfig(sha string, data []byte) error {
	if s.dir == "" {
		return nil
	}
	return s.write(filepath.Join(s.commitDir(sha), hfcache.ConfigFile), data)
}

// weights returns the cached index (nil when unsharded) and shard prefixes,
// or an error when anything is missing or does not match the manifest.
func (s store) weights(sha string) ([]byte, map[string]shardMeta, error) {
	if s.dir == "" {
		return nil, nil, fs.ErrNotExist
	}
	dir := s.commitDir(sha)
	raw, err := boundedfile.Read(filepath.Join(dir, manifestFile), maxIndexBytes)
	if err != nil {
		return nil, nil, err
	}
	var man manifest
	if err := json.Unmarshal(raw, &man); err != nil || len(man.Files) == 0 {
		return nil, nil, fmt.Errorf("%s: damaged manifest", filepath.Join(dir, manifestFile))
	}
	var index []byte
	if man.Sharded {
		if index, err = boundedfile.Read(filepath.Join(dir, safetensors.IndexFile), maxIndexBytes); err != nil {
			return nil, nil, err
		}
	}
	shards := make(map[string]shardMeta, len(man.Files))
	for name, e := range man.Files {
		if !fs.ValidPath(name) || e.HeaderBytes > 8+safetensors.MaxHeaderSize || e.HeaderBytes > e.Size {
			return nil, nil, fmt.Errorf("%s: bad entry %q", filepath.Join(dir, manifestFile), name)
		}
		p := filepath.Join(dir, "headers", filepath.FromSlash(name))
		b, err := boundedfile.Read(p, e.HeaderBytes)
		if err != nil {
			return nil, nil, err
		}
		if int64(len(b)) != e.HeaderBytes {
			return nil, nil, fmt.Errorf("%s: %d bytes, the manifest says %d", p, len(b), e.HeaderBytes)
		}
		shards[name] = shardMeta{prefix: b, size: e.Size}
	}
	return index, shards, nil
}

func (s store) putWeights(sha string, index []byte, shards map[string]shardMeta) error {
	if s.dir == "" {
		return nil
	}
	dir := s.commitDir(sha)
	man := manifest{Sharded: index != nil, Files: map[string]manifestEntry{}}
	if index != nil {
		if err := s.write(filepath.Join(dir, safetensors.IndexFile), index); err != nil {
			return err
		}
	}
	for name, m := range shards {
		// Shard names come from the index, which safetensors.ReadIndex
		// has checked to be plain relative paths inside the folder.
		if !fs.ValidPath(name) {
			return fmt.Errorf("refusing to cache shard %q: not a plain relative path", name)
		}
		if err := s.write(filepath.Join(dir, "headers", filepath.FromSlash(name)), m.prefix); err != nil {
			return err
		}
		man.Files[name] = manifestEntry{Size: m.size, HeaderBytes: int64(len(m.prefix))}
	}
	b, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return err
	}
	return s.write(filepath.Join(dir, manifestFile), b)
}

func (s store) write(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("metadata cache: %w", err)
	}
	if err := atomicfile.Write(path, data); err != nil {
		return fmt.Errorf("metadata cache: %w", err)
	}
	return nil
}
