package sttest_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"phase0/internal/sttest"
	"phase0/read/safetensors"
)

func TestWriteFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	ts := []sttest.WriteTensor{
		{Name: "w", DType: "F32", Shape: []int64{2, 3}, Data: bytes.Repeat([]byte{1, 2, 3, 4}, 6)},
		{Name: "hole", DType: "BF16", Shape: []int64{1000}},
		{Name: "scalar", DType: "I64", Data: []byte{9, 0, 0, 0, 0, 0, 0, 0}},
		{Name: `quote"and\back`, DType: "U8", Shape: []int64{0}, Data: []byte{}},
		{Name: "tail-hole", DType: "F16", Shape: []int64{5}},
	}
	if err := sttest.WriteFile(path, ts, map[string]string{"format": "pt", "note": "ünï\n"}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := safetensors.ReadHeader(bytes.NewReader(data), int64(len(data)), "m.safetensors")
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
	if err := sttest.WriteFile(path, []sttest.WriteTensor{{Name: "x", DType: "BF16", Shape: []int64{1 << 14, 1 << 14}}}, nil); err != nil {
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
		ts   []sttest.WriteTensor
		want string
	}{
		{"unknown dtype", []sttest.WriteTensor{{Name: "a", DType: "F128", Shape: []int64{1}}}, `tensor "a": unknown dtype "F128"`},
		{"duplicate", []sttest.WriteTensor{sttest.U8("a", 1), sttest.U8("a", 1)}, `tensor "a" given twice`},
		{"empty name", []sttest.WriteTensor{sttest.U8("", 1)}, "not a usable tensor name"},
		{"reserved name", []sttest.WriteTensor{sttest.U8("__metadata__", 1)}, "not a usable tensor name"},
		{"negative dim", []sttest.WriteTensor{{Name: "a", DType: "U8", Shape: []int64{-1}}}, "negative dim"},
		{"overflow", []sttest.WriteTensor{{Name: "a", DType: "F64", Shape: []int64{1 << 62, 4}}}, "too large"},
		{"data size", []sttest.WriteTensor{{Name: "a", DType: "F32", Shape: []int64{2}, Data: []byte{1}}}, "needs 8 bytes, data has 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "m.safetensors")
			err := sttest.WriteFile(path, tc.ts, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("files left behind: %v", entries)
			}
		})
	}
}

func TestWriteSharded(t *testing.T) {
	dir := t.TempDir()
	var ts []sttest.WriteTensor
	for i := range 7 {
		ts = append(ts, sttest.WriteTensor{Name: fmt.Sprintf("t%d", i), DType: "BF16", Shape: []int64{1 << 20, int64(i + 1)}})
	}
	ts = append(ts, sttest.U8("small", 3))
	if err := sttest.WriteSharded(dir, ts, 3); err != nil {
		t.Fatal(err)
	}
	inv, err := safetensors.Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	if !inv.Sharded || len(inv.Files) != 3 {
		t.Errorf("Sharded %t, files %v", inv.Sharded, inv.Files)
	}
	if inv.Len() != len(ts) {
		t.Errorf("%d tensors, want %d", inv.Len(), len(ts))
	}
	if got, _ := inv.Tensor("t6"); !reflect.DeepEqual(got.Shape, []int64{1 << 20, 7}) || got.File != "model-00003-of-00003.safetensors" {
		t.Errorf("t6 = %+v", got)
	}
	const want = 2<<20*(1+2+3+4+5+6+7) + 3
	if inv.TotalBytes != want {
		t.Errorf("TotalBytes = %d, want %d", inv.TotalBytes, want)
	}
	f, err := os.Open(filepath.Join(dir, safetensors.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ix, err := safetensors.ReadIndex(f, safetensors.IndexFile)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := ix.TotalSize(); n != inv.TotalBytes {
		t.Errorf("index total_size %d, inventory %d", n, inv.TotalBytes)
	}
	if err := sttest.WriteSharded(t.TempDir(), ts, 9); err == nil {
		t.Error("9 shards for 8 tensors accepted")
	}
}
