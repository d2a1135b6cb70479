package safetensors

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestWriteFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	ts := []WriteTensor{
		{Name: "w", DType: "F32", Shape: []int64{2, 3}, Data: bytes.Repeat([]byte{1, 2, 3, 4}, 6)},
		{Name: "hole", DType: "BF16", Shape: []int64{1000}},
		{Name: "scalar", DType: "I64", Data: []byte{9, 0, 0, 0, 0, 0, 0, 0}},
		{Name: `quote"and\back`, DType: "U8", Shape: []int64{0}, Data: []byte{}},
		{Name: "tail-hole", DType: "F16", Shape: []int64{5}},
	}
	if err := WriteFile(path, ts, map[string]string{"format": "pt", "note": "ünï\n"}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ReadHeader(bytes.NewReader(data), int64(len(data)), "m.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	if h.DataStart%8 != 0 {
		t.Errorf("DataStart %d is not 8-byte aligned", h.DataStart)
	}
	if want := map[string]string{"format": "pt", "note": "ünï\n"}; !reflect.DeepEqual(h.Metadata, want) {
		t.Errorf("Metadata = %v", h.Metadata)
	}
	if len(h.Tensors) != len(ts) {
		t.Fatalf("%d tensors read back, want %d", len(h.Tensors), len(ts))
	}
	for i, w := range ts {
		got := h.Tensors[i] // written in order, so Begin order is the same
		wantShape := w.Shape
		if wantShape == nil {
			wantShape = []int64{}
		}
		if got.Name != w.Name || got.DType != w.DType || !reflect.DeepEqual(got.Shape, wantShape) {
			t.Errorf("tensor %d = %+v, want %+v", i, got, w)
		}
		want := w.Data
		if want == nil {
			want = make([]byte, got.End-got.Begin)
		}
		if !bytes.Equal(data[got.Begin:got.End], want) {
			t.Errorf("tensor %q bytes differ", w.Name)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestWriteFileSparse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.safetensors")
	if err := WriteFile(path, []WriteTensor{{Name: "x", DType: "BF16", Shape: []int64{1 << 14, 1 << 14}}}, nil); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < 1<<29 {
		t.Fatalf("size %d, want at least 512 MiB", fi.Size())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Blocks*512 > 1<<20 {
		t.Errorf("%d bytes allocated for a hole-only file", st.Blocks*512)
	}
}

func TestWriteFileErrors(t *testing.T) {
	tests := []struct {
		name string
		ts   []WriteTensor
		want string
	}{
		{"unknown dtype", []WriteTensor{{Name: "a", DType: "F128", Shape: []int64{1}}}, `tensor "a": dtype "F128": unknown dtype`},
		{"duplicate", []WriteTensor{u8("a", 1), u8("a", 1)}, `tensor "a" given twice`},
		{"empty name", []WriteTensor{u8("", 1)}, "not a usable tensor name"},
		{"reserved name", []WriteTensor{u8(metadataKey, 1)}, "not a usable tensor name"},
		{"negative dim", []WriteTensor{{Name: "a", DType: "U8", Shape: []int64{-1}}}, "negative dim"},
		{"overflow", []WriteTensor{{Name: "a", DType: "F64", Shape: []int64{1 << 62, 4}}}, "too large"},
		{"data size", []WriteTensor{{Name: "a", DType: "F32", Shape: []int64{2}, Data: []byte{1}}}, "needs 8 bytes, data has 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "m.safetensors")
			err := WriteFile(path, tc.ts, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("files left behind: %v", entries)
			}
		})
	}
}

func TestWrite8BShape(t *testing.T) {
	dir := t.TempDir()
	if err := Write8BShape(dir); err != nil {
		t.Fatal(err)
	}
	inv, err := Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	if !inv.Sharded || len(inv.Files) != 4 {
		t.Errorf("Sharded %t, files %v", inv.Sharded, inv.Files)
	}
	if n := len(inv.Tensors); n != 32*9+3 {
		t.Errorf("%d tensors, want %d", n, 32*9+3)
	}
	checks := map[string][]int64{
		"model.embed_tokens.weight":               {128256, 4096},
		"lm_head.weight":                          {128256, 4096},
		"model.norm.weight":                       {4096},
		"model.layers.31.self_attn.k_proj.weight": {1024, 4096},
		"model.layers.0.mlp.down_proj.weight":     {4096, 14336},
	}
	for name, shape := range checks {
		if got := inv.Tensors[name]; !reflect.DeepEqual(got.Shape, shape) || got.DType != "BF16" {
			t.Errorf("%s = %+v, want BF16 %v", name, got, shape)
		}
	}
	const params = 8_030_261_248 // Llama-3.1-8B
	if inv.TotalBytes != 2*params {
		t.Errorf("TotalBytes = %d, want %d", inv.TotalBytes, 2*params)
	}
	f, err := os.Open(filepath.Join(dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ix, err := ReadIndex(f, IndexFile)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := ix.TotalSize(); n != inv.TotalBytes {
		t.Errorf("index total_size %d, inventory %d", n, inv.TotalBytes)
	}
}
