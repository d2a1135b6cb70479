package safetensors

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"phase0/internal/sttest"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func mustWrite(t *testing.T, dir, file string, ts ...sttest.WriteTensor) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, file)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := sttest.WriteFile(filepath.Join(dir, file), ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
}

func mustIndex(t *testing.T, dir string, wm map[string]string) {
	t.Helper()
	if err := sttest.WriteIndex(filepath.Join(dir, IndexFile), wm, 0); err != nil {
		t.Fatal(err)
	}
}

func mustRaw(t *testing.T, dir, file, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const (
	shard1 = "model-00001-of-00002.safetensors"
	shard2 = "model-00002-of-00002.safetensors"
)

// twoShards writes a valid sharded checkpoint: a, b in shard1; c in shard2.
func twoShards(t *testing.T, dir string) {
	mustWrite(t, dir, shard1, sttest.U8("a", 3), sttest.U8("b", 5))
	mustWrite(t, dir, shard2, sttest.U8("c", 7))
	mustIndex(t, dir, map[string]string{"a": shard1, "b": shard1, "c": shard2})
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		is      error
		want    []string // error substrings
		files   []string // on success
		tensors []string
		sharded bool
	}{
		{
			// The index lists a shard's tensors in another order than its
			// header: the per-tensor check, not the in-order one, decides.
			name: "sharded, header keys not in index order",
			setup: func(t *testing.T, dir string) {
				mustWrite(t, dir, shard1, sttest.U8("b", 5), sttest.U8("a", 3))
				mustWrite(t, dir, shard2, sttest.U8("c", 7))
				mustIndex(t, dir, map[string]string{"a": shard1, "b": shard1, "c": shard2})
			},
			files: []string{shard1, shard2}, tensors: []string{"a", "b", "c"}, sharded: true,
		},
		{
			// Keys a, b in order but data b then a: the key order, not
			// the data order, is compared with the index.
			name: "sharded, key order differs from data order",
			setup: func(t *testing.T, dir string) {
				mustRaw(t, dir, shard1, string(rawFile(`{"a":{"dtype":"U8","shape":[3],"data_offsets":[5,8]},"b":{"dtype":"U8","shape":[5],"data_offsets":[0,5]}}`, 8)))
				mustWrite(t, dir, shard2, sttest.U8("c", 7))
				mustIndex(t, dir, map[string]string{"a": shard1, "b": shard1, "c": shard2})
			},
			files: []string{shard1, shard2}, tensors: []string{"a", "b", "c"}, sharded: true,
		},
		{
			name: "sharded, out of order and one tensor the index puts elsewhere",
			setup: func(t *testing.T, dir string) {
				mustWrite(t, dir, shard1, sttest.U8("b", 5), sttest.U8("a", 3), sttest.U8("c", 1))
				mustWrite(t, dir, shard2, sttest.U8("d", 7))
				mustIndex(t, dir, map[string]string{"a": shard1, "b": shard1, "c": shard2, "d": shard2})
			},
			is: ErrTensorNotInIndex, want: []string{`tensor "c" is in the header of ` + shard1, "assigns it to " + shard2},
		},
		{
			name: "sharded, a name repeated in one header",
			setup: func(t *testing.T, dir string) {
				mustRaw(t, dir, shard1, string(rawFile(`{"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},"a":{"dtype":"U8","shape":[3],"data_offsets":[3,6]}}`, 6)))
				mustWrite(t, dir, shard2, sttest.U8("c", 7))
				mustIndex(t, dir, map[string]string{"a": shard1, "c": shard2})
			},
			is: ErrDuplicateKey, want: []string{`key "a" appears twice in the header`, shard1},
		},
		{
			name:    "single file",
			setup:   func(t *testing.T, dir string) { mustWrite(t, dir, SingleFile, sttest.U8("x", 4), sttest.U8("y", 2)) },
			files:   []string{SingleFile},
			tensors: []string{"x", "y"},
		},
		{
			name: "single file wins over other safetensors without index",
			setup: func(t *testing.T, dir string) {
				mustWrite(t, dir, SingleFile, sttest.U8("x", 4))
				mustWrite(t, dir, "consolidated.safetensors", sttest.U8("x", 4))
			},
			files:   []string{SingleFile},
			tensors: []string{"x"},
		},
		{
			name:    "sharded",
			setup:   twoShards,
			files:   []string{shard1, shard2},
			tensors: []string{"a", "b", "c"},
			sharded: true,
		},
		{
			name: "sharded, shard in a subfolder, stray safetensors ignored",
			setup: func(t *testing.T, dir string) {
				mustWrite(t, dir, "w/"+shard1, sttest.U8("a", 3))
				mustWrite(t, dir, "consolidated.safetensors", sttest.U8("a", 3))
				mustIndex(t, dir, map[string]string{"a": "w/" + shard1})
			},
			files:   []string{"w/" + shard1},
			tensors: []string{"a"},
			sharded: true,
		},
		{
			name: "several files without index",
			setup: func(t *testing.T, dir string) {
				mustWrite(t, dir, "b.safetensors", sttest.U8("y", 1))
				mustWrite(t, dir, "a.safetensors", sttest.U8("x", 1))
			},
			files:   []string{"a.safetensors", "b.safetensors"},
			tensors: []string{"x", "y"},
		},
		{
			name: "same tensor in two files without index",
			setup: func(t *testing.T, dir string) {
				mustWrite(t, dir, "a.safetensors", sttest.U8("x", 1))
				mustWrite(t, dir, "b.safetensors", sttest.U8("x", 1))
			},
			is:   ErrDuplicateTensor,
			want: []string{`tensor "x"`, "a.safetensors", "b.safetensors"},
		},
		{
			name: "index and single file",
			setup: func(t *testing.T, dir string) {
				twoShards(t, dir)
				mustWrite(t, dir, SingleFile, sttest.U8("a", 3))
			},
			is:   ErrMixedLayout,
			want: []string{SingleFile, IndexFile},
		},
		{
			name: "index names a missing shard",
			setup: func(t *testing.T, dir string) {
				mustWrite(t, dir, shard1, sttest.U8("a", 3))
				mustIndex(t, dir, map[string]string{"a": shard1, "c": shard2})
			},
			is:   ErrMissingShard,
			want: []string{shard2},
		},
		{
			name: "index path escapes the folder",
			setup: func(t *testing.T, dir string) {
				mustRaw(t, dir, IndexFile, `{"weight_map": {"a": "../`+shard1+`"}}`)
			},
			is:   ErrUnsafePath,
			want: []string{IndexFile, `"a"`, "../" + shard1},
		},
		{
			name: "index path absolute",
			setup: func(t *testing.T, dir string) {
				mustRaw(t, dir, IndexFile, `{"weight_map": {"a": "/tmp/x.safetensors"}}`)
			},
			is:   ErrUnsafePath,
			want: []string{"absolute"},
		},
		{
			name: "index path with backslash",
			setup: func(t *testing.T, dir string) {
				mustRaw(t, dir, IndexFile, `{"weight_map": {"a": "sub\\x.safetensors"}}`)
			},
			is:   ErrUnsafePath,
			want: []string{"backslash"},
		},
		{
			name: "index assigns a tensor the shard lacks",
			setup: func(t *testing.T, dir string) {
				twoShards(t, dir)
				mustIndex(t, dir, map[string]string{"a": shard1, "b": shard1, "c": shard2, "d": shard2, "e": shard2})
			},
			is:   ErrTensorNotInShard,
			want: []string{`tensor "d" (and 1 more)`, shard2},
		},
		{
			name: "shard holds a tensor the index omits",
			setup: func(t *testing.T, dir string) {
				twoShards(t, dir)
				mustIndex(t, dir, map[string]string{"a": shard1, "c": shard2})
			},
			is:   ErrTensorNotInIndex,
			want: []string{`tensor "b"`, shard1, "does not list it"},
		},
		{
			name: "index puts a tensor in the other shard",
			setup: func(t *testing.T, dir string) {
				twoShards(t, dir)
				mustIndex(t, dir, map[string]string{"a": shard1, "b": shard2, "c": shard2})
			},
			is:   ErrTensorNotInIndex,
			want: []string{`tensor "b"`, shard1, "assigns it to " + shard2},
		},
		{
			name: "malformed shard header",
			setup: func(t *testing.T, dir string) {
				twoShards(t, dir)
				mustRaw(t, dir, shard2, string(rawFile(`{"c":{"dtype":"U8","shape":[7],"data_offsets":[0,7]}}`, 3)))
			},
			is:   ErrTruncated,
			want: []string{shard2, "only 3 data bytes"},
		},
		{
			name:  "malformed index",
			setup: func(t *testing.T, dir string) { mustRaw(t, dir, IndexFile, `{"weight_map": {}}`) },
			want:  []string{IndexFile, "weight_map is empty"},
		},
		{
			name: "pickle only",
			setup: func(t *testing.T, dir string) {
				mustRaw(t, dir, "pytorch_model.bin", "not a pickle, must not be read")
				mustRaw(t, dir, "config.json", "{}")
			},
			is:   ErrPickleOnly,
			want: []string{"pytorch_model.bin"},
		},
		{
			name: "sharded pickle only",
			setup: func(t *testing.T, dir string) {
				mustRaw(t, dir, "pytorch_model-00001-of-00002.bin", "x")
				mustRaw(t, dir, "pytorch_model.bin.index.json", "{}")
				mustRaw(t, dir, "extra.pt", "x")
			},
			is:   ErrPickleOnly,
			want: []string{"extra.pt", "pytorch_model-00001-of-00002.bin"},
		},
		{
			name:  "nothing",
			setup: func(t *testing.T, dir string) { mustRaw(t, dir, "config.json", "{}") },
			is:    ErrNoWeights,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			fsys := &watchFS{FS: os.DirFS(dir)}
			inv, err := Load(fsys)
			for _, name := range fsys.opened {
				if isPickleName(name) {
					t.Errorf("Load opened pickle file %s", name)
				}
			}
			if tc.is != nil || tc.want != nil {
				if err == nil {
					t.Fatalf("Load succeeded with %v, want an error", inv.Files)
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Errorf("error %q is not %v", err, tc.is)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(inv.Files, tc.files) {
				t.Errorf("Files = %v, want %v", inv.Files, tc.files)
			}
			if !reflect.DeepEqual(inv.Names(), tc.tensors) {
				t.Errorf("Names = %v, want %v", inv.Names(), tc.tensors)
			}
			if inv.Sharded != tc.sharded {
				t.Errorf("Sharded = %t", inv.Sharded)
			}
			if inv.Metadata["format"] != "pt" {
				t.Errorf("Metadata = %v", inv.Metadata)
			}
			var sum int64
			for _, name := range inv.Names() {
				tn, _ := inv.Tensor(name)
				sum += tn.End - tn.Begin
				if tn.Name != name {
					t.Errorf("Tensors[%q].Name = %q", name, tn.Name)
				}
			}
			if sum != inv.TotalBytes {
				t.Errorf("TotalBytes = %d, tensors sum to %d", inv.TotalBytes, sum)
			}
		})
	}
}

// watchFS records every path opened (Load opens shards concurrently).
type watchFS struct {
	fs.FS
	mu     sync.Mutex
	opened []string
}

func (w *watchFS) Open(name string) (fs.File, error) {
	w.mu.Lock()
	w.opened = append(w.opened, name)
	w.mu.Unlock()
	return w.FS.Open(name)
}

func (w *watchFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(w.FS, name) }

// plainFS hides io.ReaderAt so Load takes its sequential path.
type plainFS struct{ fs.FS }

type plainFile struct{ f fs.File }

func (p plainFile) Stat() (fs.FileInfo, error) { return p.f.Stat() }
func (p plainFile) Read(b []byte) (int, error) { return p.f.Read(b) }
func (p plainFile) Close() error               { return p.f.Close() }

func (p plainFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(p.FS, name) }

func (p plainFS) Open(name string) (fs.File, error) {
	f, err := p.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return plainFile{f}, nil
}

func TestLoadWithoutReaderAt(t *testing.T) {
	dir := t.TempDir()
	twoShards(t, dir)
	want, err := Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Load(plainFS{os.DirFS(dir)})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sequential read gave\n%+v\nReaderAt gave\n%+v", got, want)
	}
	var f fs.File = plainFile{}
	if _, ok := f.(io.ReaderAt); ok {
		t.Fatal("plainFile must not be an io.ReaderAt")
	}
}

func TestLoadShardedOffsets(t *testing.T) {
	dir := t.TempDir()
	twoShards(t, dir)
	if _, err := Load(os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	// Read each tensor's bytes at the absolute offsets and compare with a marker.
	mustWrite(t, dir, shard1,
		sttest.WriteTensor{Name: "a", DType: "U8", Shape: []int64{3}, Data: []byte("AAA")},
		sttest.WriteTensor{Name: "b", DType: "U8", Shape: []int64{5}, Data: []byte("BBBBB")})
	mustWrite(t, dir, shard2, sttest.WriteTensor{Name: "c", DType: "U8", Shape: []int64{7}, Data: []byte("CCCCCCC")})
	inv, err := Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": "AAA", "b": "BBBBB", "c": "CCCCCCC"} {
		tn, _ := inv.Tensor(name)
		data, err := os.ReadFile(filepath.Join(dir, tn.File))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(data[tn.Begin:tn.End]); got != want {
			t.Errorf("%s at [%d,%d) of %s = %q, want %q", name, tn.Begin, tn.End, tn.File, got, want)
		}
	}
	if inv.TotalBytes != 15 {
		t.Errorf("TotalBytes = %d", inv.TotalBytes)
	}
}

// TestLoadShardedInOrder: a checkpoint written as the hub writes them takes
// the in-order way and gives the same inventory as the tensor-by-tensor
// check; one listed in another order, or with a name twice, does not take it.
func TestLoadShardedInOrder(t *testing.T) {
	dir := t.TempDir()
	var ts []sttest.WriteTensor
	for i := range 40 {
		ts = append(ts, sttest.U8(fmt.Sprintf("model.layers.%d.w", i), i%5+1))
	}
	if err := sttest.WriteSharded(dir, ts, 4); err != nil {
		t.Fatal(err)
	}
	fast := loadShardedInOrder(os.DirFS(dir))
	if fast == nil {
		t.Fatal("a hub-ordered checkpoint did not take the in-order way")
	}
	checked, err := loadShardedChecked(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	sameInventory(t, fast, checked)
	if fast.byName != nil {
		t.Error("an index in increasing order still built a map of names")
	}

	// Names not in increasing order: the in-order way maps them instead.
	unsorted := t.TempDir()
	mustWrite(t, unsorted, shard1, sttest.U8("a", 3), sttest.U8("b", 5))
	mustWrite(t, unsorted, shard2, sttest.U8("c", 7))
	mustRaw(t, unsorted, IndexFile, `{"weight_map":{"c":"`+shard2+`","a":"`+shard1+`","b":"`+shard1+`"}}`)
	if fast = loadShardedInOrder(os.DirFS(unsorted)); fast == nil || fast.byName == nil {
		t.Fatalf("an unsorted index in the headers' order: %+v, want the in-order way with a map", fast)
	}
	if checked, err = loadShardedChecked(os.DirFS(unsorted)); err != nil {
		t.Fatal(err)
	}
	sameInventory(t, fast, checked)

	other := t.TempDir()
	mustWrite(t, other, shard1, sttest.U8("b", 5), sttest.U8("a", 3))
	mustWrite(t, other, shard2, sttest.U8("c", 7))
	mustIndex(t, other, map[string]string{"a": shard1, "b": shard1, "c": shard2})
	if loadShardedInOrder(os.DirFS(other)) != nil {
		t.Error("a header out of the index's order took the in-order way")
	}
	twice := t.TempDir()
	mustWrite(t, twice, shard1, sttest.U8("a", 3))
	mustWrite(t, twice, shard2, sttest.U8("a", 3))
	mustRaw(t, twice, IndexFile, `{"weight_map":{"a":"`+shard1+`","a":"`+shard2+`"}}`)
	if loadShardedInOrder(os.DirFS(twice)) != nil {
		t.Error("a name in two shards took the in-order way")
	}
	if _, err := Load(os.DirFS(twice)); !errors.Is(err, ErrDuplicateKey) {
		t.Errorf("Load of an index naming a tensor twice: %v, want ErrDuplicateKey", err)
	}
}

// sameInventory compares two inventories through what callers see.
func sameInventory(t *testing.T, got, want *Inventory) {
	t.Helper()
	if got.Sharded != want.Sharded || !reflect.DeepEqual(got.Files, want.Files) || !reflect.DeepEqual(got.Metadata, want.Metadata) ||
		got.TotalBytes != want.TotalBytes || !reflect.DeepEqual(got.Tensors(), want.Tensors()) || !reflect.DeepEqual(got.Names(), want.Names()) {
		t.Fatalf("inventory %+v\nwant %+v", got, want)
	}
	for _, tn := range want.Tensors() {
		if g, ok := got.Tensor(tn.Name); !ok || !reflect.DeepEqual(g, tn) {
			t.Errorf("Tensor(%q) = %+v, %t; want %+v", tn.Name, g, ok, tn)
		}
	}
	for _, name := range []string{"", "model", "zzz", "model.layers.1", "model.layers.1.w0"} {
		if got.Has(name) || want.Has(name) {
			t.Errorf("Has(%q) is true", name)
		}
	}
}

// TestLoadMappedIndex: an index past mapIndexMin is mapped, not read, and
// gives the same inventory as the tensor-by-tensor check.
func TestLoadMappedIndex(t *testing.T) {
	dir := t.TempDir()
	var ts []sttest.WriteTensor
	for i := range 16_000 {
		ts = append(ts, sttest.U8(fmt.Sprintf("model.layers.%d.mlp.up_proj.weight", i), i%3+1))
	}
	if err := sttest.WriteSharded(dir, ts, 8); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, IndexFile)); err != nil || fi.Size() < mapIndexMin {
		t.Fatalf("index %v, %v: want at least %d bytes", fi, err, mapIndexMin)
	}
	fast := loadShardedInOrder(os.DirFS(dir))
	if fast == nil {
		t.Fatal("the mapped index did not take the in-order way")
	}
	checked, err := loadShardedChecked(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	sameInventory(t, fast, checked)
}
