package hubmeta

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"phase0/read/hfcache"
	"phase0/read/safetensors"
)

// errNotFetched is what reading a tensor's bytes from a metaFS gives: only
// the headers were fetched. safetensors.ReadHeader never asks for them.
var errNotFetched = errors.New("tensor data was not fetched (remote inspection reads headers only)")

// metaFS is a read-only model folder made of fetched metadata: config.json,
// the index, and each shard as its header prefix with the shard's real
// size, so safetensors.Load checks offsets against the true file length.
type metaFS map[string]*metaFile

type metaFile struct {
	name string
	data []byte
	size int64
}

func newMetaFS(config, index []byte, shards map[string]shardMeta) metaFS {
	m := metaFS{hfcache.ConfigFile: {name: hfcache.ConfigFile, data: config, size: int64(len(config))}}
	if index != nil {
		m[safetensors.IndexFile] = &metaFile{name: safetensors.IndexFile, data: index, size: int64(len(index))}
	}
	for name, s := range shards {
		m[name] = &metaFile{name: name, data: s.prefix, size: s.size}
	}
	return m
}

func (m metaFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if f, ok := m[name]; ok {
		return &openMeta{metaFile: f}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// ReadDir lists the top level only, which is all safetensors.Load reads:
// shards in subfolders are reached through the index.
func (m metaFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if name != "." {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	var out []fs.DirEntry
	dirs := map[string]bool{}
	for n, f := range m {
		top, _, nested := strings.Cut(n, "/")
		if nested {
			if !dirs[top] {
				dirs[top] = true
				out = append(out, fs.FileInfoToDirEntry(metaInfo{name: top, dir: true}))
			}
			continue
		}
		out = append(out, fs.FileInfoToDirEntry(metaInfo{name: n, size: f.size}))
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

type openMeta struct {
	*metaFile
	off int64
}

func (f *openMeta) Stat() (fs.FileInfo, error) {
	return metaInfo{name: path.Base(f.name), size: f.size}, nil
}

func (f *openMeta) Read(p []byte) (int, error) {
	n, err := f.ReadAt(p, f.off)
	f.off += int64(n)
	return n, err
}

func (f *openMeta) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset", f.name)
	}
	if off >= f.size {
		return 0, io.EOF
	}
	if off+int64(len(p)) > int64(len(f.data)) && int64(len(f.data)) < f.size {
		n := 0
		if off < int64(len(f.data)) {
			n = copy(p, f.data[off:])
		}
		return n, fmt.Errorf("%s: bytes from %d: %w", f.name, off+int64(n), errNotFetched)
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *openMeta) Close() error { return nil }

type metaInfo struct {
	name string
	size int64
	dir  bool
}

func (i metaInfo) Name() string { return i.name }
func (i metaInfo) Size() int64  { return i.size }
func (i metaInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i metaInfo) ModTime() time.Time { return time.Time{} }
func (i metaInfo) IsDir() bool        { return i.dir }
func (i metaInfo) Sys() any           { return nil }
