package hfcache

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	shaA = "0123456789abcdef0123456789abcdef01234567"
	shaB = "89abcdef0123456789abcdef0123456789abcdef"
)

// cacheRepo lays out one repository the way huggingface_hub's
// hf_hub_download does: blobs/<etag> holding the bytes (sha256 for LFS files,
// the git blob sha1 otherwise), snapshots/<sha>/<file> as relative symlinks
// to the blob, and refs/<name> holding the commit sha without a newline.
type cacheRepo struct {
	t   testing.TB
	dir string // <cache>/models--org--name
}

func newCacheRepo(t testing.TB, cache, id string) *cacheRepo {
	t.Helper()
	dir := filepath.Join(cache, "models--"+strings.ReplaceAll(id, "/", "--"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &cacheRepo{t: t, dir: dir}
}

func etagOf(name string, data []byte) string {
	if strings.HasSuffix(name, ".safetensors") {
		sum := sha256.Sum256(data)
		return hex.EncodeToString(sum[:])
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

func (r *cacheRepo) ref(name, sha string) *cacheRepo {
	r.t.Helper()
	p := filepath.Join(r.dir, "refs", filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(sha), 0o644); err != nil {
		r.t.Fatal(err)
	}
	return r
}

func (r *cacheRepo) snapshot(sha string, files map[string][]byte) *cacheRepo {
	r.t.Helper()
	for name, data := range files {
		etag := etagOf(name, data)
		blob := filepath.Join(r.dir, "blobs", etag)
		if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(blob, data, 0o644); err != nil {
			r.t.Fatal(err)
		}
		link := filepath.Join(r.dir, "snapshots", sha, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			r.t.Fatal(err)
		}
		rel, err := filepath.Rel(filepath.Dir(link), blob)
		if err != nil {
			r.t.Fatal(err)
		}
		if err := os.Symlink(rel, link); err != nil {
			r.t.Fatal(err)
		}
	}
	if len(files) == 0 {
		if err := os.MkdirAll(filepath.Join(r.dir, "snapshots", sha), 0o755); err != nil {
			r.t.Fatal(err)
		}
	}
	return r
}

// removeBlob deletes the blob behind a snapshot file, leaving a dangling link.
func (r *cacheRepo) removeBlob(sha, name string) *cacheRepo {
	r.t.Helper()
	link := filepath.Join(r.dir, "snapshots", sha, name)
	target, err := os.Readlink(link)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(filepath.Dir(link), target)); err != nil {
		r.t.Fatal(err)
	}
	return r
}

func indexJSON(shards map[string]string) []byte {
	var parts []string
	for tensor, shard := range shards {
		parts = append(parts, fmt.Sprintf("%q: %q", tensor, shard))
	}
	slices.Sort(parts)
	return []byte(`{"metadata": {"total_size": 16}, "weight_map": {` + strings.Join(parts, ", ") + `}}`)
}

func singleFileModel() map[string][]byte {
	return map[string][]byte{
		"config.json":           []byte(`{"architectures": ["LlamaForCausalLM"]}`),
		"model.safetensors":     []byte("weights"),
		"tokenizer.json":        []byte(`{}`),
		"tokenizer_config.json": []byte(`{}`),
	}
}

func shardedModel() map[string][]byte {
	return map[string][]byte{
		"config.json": []byte(`{"architectures": ["MistralForCausalLM"]}`),
		"model.safetensors.index.json": indexJSON(map[string]string{
			"a": "model-00001-of-00002.safetensors",
			"b": "model-00002-of-00002.safetensors",
			"c": "model-00002-of-00002.safetensors",
		}),
		"model-00001-of-00002.safetensors": []byte("one"),
		"model-00002-of-00002.safetensors": []byte("two"),
		"tokenizer.model":                  []byte("spm"),
		"tokenizer_config.json":            []byte(`{}`),
	}
}

func without(files map[string][]byte, names ...string) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range files {
		if !slices.Contains(names, k) {
			out[k] = v
		}
	}
	return out
}

func with(files map[string][]byte, name string, data []byte) map[string][]byte {
	out := without(files)
	out[name] = data
	return out
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name        string
		id          string
		setup       func(cache string)
		wantSHA     string
		wantMissing []string
		wantErr     error
		wantErrText string
	}{
		{
			name:    "main ref, single file",
			id:      "org/model",
			setup:   func(c string) { newCacheRepo(t, c, "org/model").ref("main", shaA).snapshot(shaA, singleFileModel()) },
			wantSHA: shaA,
		},
		{
			name: "named branch picks its own snapshot",
			id:   "org/model@dev",
			setup: func(c string) {
				newCacheRepo(t, c, "org/model").ref("main", shaA).ref("dev", shaB).
					snapshot(shaA, singleFileModel()).snapshot(shaB, singleFileModel())
			},
			wantSHA: shaB,
		},
		{
			name: "nested pr ref",
			id:   "org/model@refs/pr/7",
			setup: func(c string) {
				newCacheRepo(t, c, "org/model").ref("refs/pr/7", shaB).snapshot(shaB, singleFileModel())
			},
			wantSHA: shaB,
		},
		{
			name:    "commit sha used directly, no ref needed",
			id:      "org/model@" + shaB,
			setup:   func(c string) { newCacheRepo(t, c, "org/model").ref("main", shaA).snapshot(shaB, singleFileModel()) },
			wantSHA: shaB,
		},
		{
			name:    "legacy id without namespace",
			id:      "gpt2",
			setup:   func(c string) { newCacheRepo(t, c, "gpt2").ref("main", shaA).snapshot(shaA, singleFileModel()) },
			wantSHA: shaA,
		},
		{
			name: "ref with trailing newline",
			id:   "org/model",
			setup: func(c string) {
				newCacheRepo(t, c, "org/model").ref("main", shaA+"\n").snapshot(shaA, singleFileModel())
			},
			wantSHA: shaA,
		},
		{
			name:    "sharded with index, all present",
			id:      "org/model",
			setup:   func(c string) { newCacheRepo(t, c, "org/model").ref("main", shaA).snapshot(shaA, shardedModel()) },
			wantSHA: shaA,
		},
		{
			name: "sharded, one shard not downloaded",
			id:   "org/model",
			setup: func(c string) {
				newCacheRepo(t, c, "org/model").ref("main", shaA).
					snapshot(shaA, without(shardedModel(), "model-00002-of-00002.safetensors"))
			},
			wantSHA:     shaA,
			wantMissing: []string{"model-00002-of-00002.safetensors"},
		},
		{
			name: "dangling symlinks are missing files",
			id:   "org/model",
			setup: func(c string) {
				newCacheRepo(t, c, "org/model").ref("main", shaA).snapshot(shaA, shardedModel()).
					removeBlob(shaA, "model-00001-of-00002.safetensors").removeBlob(shaA, "config.json")
			},
			wantSHA:     shaA,
			wantMissing: []string{"config.json", "model-00001-of-00002.safetensors"},
		},
		{
			name: "dangling index link",
			id:   "org/model",
			setup: func(c string) {
				newCacheRepo(t, c, "org/model").ref("main", shaA).snapshot(shaA, shardedModel()).
					removeBlob(shaA, "model.safetensors.index.json")
			},
			wantSHA:     shaA,
			wantMissing: []string{"model.safetensors.index.json"},
		},
		{
			name: "nothing but the tokenizer config",
			id:   "org/model",
			setup: func(c string) {
				newCacheRepo(t, c, "org/model").ref("main", shaA).snapshot(shaA, map[string][]byte{"tokenizer_config.json": []byte("{}")})
			},
			wantSHA:     shaA,
			wantMissing: []string{"config.json", "model.safetensors", "tokenizer.json"},
		},
		{
			name: "pickle only counts as missing weights",
			id:   "org/model",
			setup: func(c string) {
				newCacheRepo(t, c, "org/model").ref("main", shaA).
					snapshot(shaA, with(without(singleFileModel(), "model.safetensors"), "pytorch_model.bin", []byte("pickle")))
			},
			wantSHA:     shaA,
			wantMissing: []string{"model.safetensors"},
		},
		{
			name: "bpe vocab and merges are a tokenizer",
			id:   "org/model",
			setup: func(c string) {
				files := without(singleFileModel(), "tokenizer.json")
				files["vocab.json"] = []byte("{}")
				files["merges.txt"] = []byte("#")
				newCacheRepo(t, c, "org/model").ref("main", shaA).snapshot(shaA, files)
			},
			wantSHA: shaA,
		},
		{
			name: "vocab without merges is not",
			id:   "org/model",
			setup: func(c string) {
				files := with(without(singleFileModel(), "tokenizer.json"), "vocab.json", []byte("{}"))
				newCacheRepo(t, c, "org/model").ref("main", shaA).snapshot(shaA, files)
			},
			wantSHA:     shaA,
			wantMissing: []string{"tokenizer.json"},
		},
		{
			name: "tokenizer_config.json is optional",
			id:   "org/model",
			setup: func(c string) {
				newCacheRepo(t, c, "org/model").ref("main", shaA).snapshot(shaA, without(singleFileModel(), "tokenizer_config.json"))
			},
			wantSHA: shaA,
		},
		{
			name:        "no repo folder",
			id:          "org/model",
			setup:       func(c string) { newCacheRepo(t, c, "org/other").ref("main", shaA).snapshot(shaA, singleFileModel()) },
			wantErr:     ErrNotCached,
			wantErrText: "models--org--model",
		},
		{
			name:        "no ref",
			id:          "org/model@dev",
			setup:       func(c string) { newCacheRepo(t, c, "org/model").ref("main", shaA).snapshot(shaA, singleFileModel()) },
			wantErr:     ErrNotCached,
			wantErrText: filepath.Join("refs", "dev"),
		},
		{
			name:        "ref but no snapshot",
			id:          "org/model",
			setup:       func(c string) { newCacheRepo(t, c, "org/model").ref("main", shaA).snapshot(shaB, singleFileModel()) },
			wantErr:     ErrNotCached,
			wantErrText: filepath.Join("snapshots", shaA),
		},
		{
			name:        "commit sha not cached",
			id:          "org/model@" + shaB,
			setup:       func(c string) { newCacheRepo(t, c, "org/model").ref("main", shaA).snapshot(shaA, singleFileModel()) },
			wantErr:     ErrNotCached,
			wantErrText: shaB,
		},
		{
			name:        "ref file with garbage",
			id:          "org/model",
			setup:       func(c string) { newCacheRepo(t, c, "org/model").ref("main", "not a sha") },
			wantErr:     ErrCorruptCache,
			wantErrText: `"not a sha"`,
		},
		{
			name: "index shard escaping the folder",
			id:   "org/model",
			setup: func(c string) {
				files := with(shardedModel(), "model.safetensors.index.json", indexJSON(map[string]string{"a": "../../blobs/x.safetensors"}))
				newCacheRepo(t, c, "org/model").ref("main", shaA).snapshot(shaA, files)
			},
			wantErr:     ErrCorruptCache,
			wantErrText: `shard "../../blobs/x.safetensors": not a plain relative path`,
		},
		{
			name: "index without weight_map",
			id:   "org/model",
			setup: func(c string) {
				files := with(shardedModel(), "model.safetensors.index.json", []byte(`{"metadata": {}}`))
				newCacheRepo(t, c, "org/model").ref("main", shaA).snapshot(shaA, files)
			},
			wantErr:     ErrCorruptCache,
			wantErrText: "model.safetensors.index.json: offset 16: no weight_map",
		},
		{
			name: "index not json",
			id:   "org/model",
			setup: func(c string) {
				files := with(shardedModel(), "model.safetensors.index.json", []byte(`{"weight_map": `))
				newCacheRepo(t, c, "org/model").ref("main", shaA).snapshot(shaA, files)
			},
			wantErr:     ErrCorruptCache,
			wantErrText: "model.safetensors.index.json",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := t.TempDir()
			tt.setup(cache)
			ref, err := ParseID(tt.id)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Resolve(cache, ref)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Resolve(%s) error = %v, want %v", tt.id, err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErrText) {
					t.Errorf("error %q should contain %q", err, tt.wantErrText)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%s): %v", tt.id, err)
			}
			wantDir := filepath.Join(cache, ref.FolderName(), "snapshots", tt.wantSHA)
			if got.Dir != wantDir || got.Revision != tt.wantSHA || got.Ref != ref {
				t.Errorf("Resolve(%s) = {Dir %s, Revision %s, Ref %+v}, want {%s, %s, %+v}", tt.id, got.Dir, got.Revision, got.Ref, wantDir, tt.wantSHA, ref)
			}
			if !slices.Equal(got.Missing, tt.wantMissing) {
				t.Errorf("Missing = %q, want %q", got.Missing, tt.wantMissing)
			}
			if got.Complete() != (len(tt.wantMissing) == 0) {
				t.Errorf("Complete() = %v with Missing %q", got.Complete(), got.Missing)
			}
		})
	}
}

func TestResolveRejectsHandMadeRefs(t *testing.T) {
	cache := t.TempDir()
	newCacheRepo(t, cache, "org/model").ref("main", shaA).snapshot(shaA, singleFileModel())
	tests := []struct {
		ref  Ref
		want error
	}{
		{Ref{ID: "org/model", Org: "org", Name: "model", Revision: "../../../etc"}, ErrBadRevision},
		{Ref{ID: "org/model", Org: "org", Name: "model", Revision: "a b"}, ErrBadRevision},
		{Ref{ID: "org/../model"}, ErrInvalidID},
	}
	for _, tt := range tests {
		if _, err := Resolve(cache, tt.ref); !errors.Is(err, tt.want) {
			t.Errorf("Resolve(%+v) error = %v, want %v", tt.ref, err, tt.want)
		}
	}
}

func BenchmarkResolveSharded(b *testing.B) {
	cache := b.TempDir()
	newCacheRepo(b, cache, "org/model").ref("main", shaA).snapshot(shaA, shardedModel())
	ref, err := ParseID("org/model")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Resolve(cache, ref); err != nil {
			b.Fatal(err)
		}
	}
}

// TestResolveRefusesNonRegular: a directory or FIFO where a snapshot file
// belongs is a damaged cache named in the error, not a missing file, and a
// FIFO is never opened (that would block).
func TestResolveRefusesNonRegular(t *testing.T) {
	tests := []struct {
		name   string
		files  map[string][]byte
		remove string // replaced by the special file
		fifo   bool
		want   string
	}{
		{"index is a directory", singleFileModel(), "model.safetensors.index.json", false, "model.safetensors.index.json in "},
		{"index is a FIFO", shardedModel(), "model.safetensors.index.json", true, "model.safetensors.index.json in "},
		{"config is a FIFO", singleFileModel(), "config.json", true, "config.json in "},
		{"shard is a directory", shardedModel(), "model-00002-of-00002.safetensors", false, "model-00002-of-00002.safetensors in "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := t.TempDir()
			files := without(tt.files, tt.remove)
			newCacheRepo(t, cache, "org/model").ref("main", shaA).snapshot(shaA, files)
			path := filepath.Join(cache, "models--org--model", "snapshots", shaA, tt.remove)
			if tt.fifo {
				if err := syscall.Mkfifo(path, 0o644); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
			} else if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
			ref, err := ParseID("org/model")
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := Resolve(cache, ref)
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, ErrCorruptCache) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "not a regular file") {
					t.Fatalf("got %v, want ErrCorruptCache naming %q as not a regular file", err, tt.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Resolve blocked")
			}
		})
	}
}
