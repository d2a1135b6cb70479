package safetensors

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"phase0/internal/stformat"
	"phase0/internal/sttest"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// seedFiles adds every file matching pattern to the fuzz corpus.
func seedFiles(f *testing.F, pattern string) {
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed files for %s: %v", pattern, err)
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

func FuzzReadHeader(f *testing.F) {
	seedFiles(f, filepath.Join("testdata", "malformed", "*.safetensors"))
	for _, ts := range [][]sttest.WriteTensor{
		nil,
		{sttest.U8("a", 3), {Name: "b", DType: "BF16", Shape: []int64{2, 2}, Data: make([]byte, 8)}},
		{{Name: "s", DType: "F64", Data: make([]byte, 8)}, {Name: "z", DType: "F32", Shape: []int64{0}, Data: []byte{}}},
	} {
		hdr, sizes, err := sttest.EncodeHeader(ts, map[string]string{"format": "pt"})
		if err != nil {
			f.Fatal(err)
		}
		data := rawFile(string(hdr), 0)
		for _, s := range sizes {
			data = append(data, make([]byte, s)...)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		size := int64(len(data))
		h, err := ReadHeader(bytes.NewReader(data), size, "fuzz.safetensors")
		// Load reads headers without the repeated-name check (its map
		// insert finds them), into its own slice when it has room:
		// otherwise it must agree with ReadHeader.
		dst := make([]Tensor, 0, size%7)
		buf := make([]byte, size%5*size/4) // too short for some headers
		loose, looseErr := readHeader(bytes.NewReader(data), size, "fuzz.safetensors", headerOpts{dst: dst, buf: &buf})
		clear(buf[:cap(buf)]) // names must not point into it
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is %T, want *FormatError", err, err)
			}
			if looseErr == nil && !errors.Is(err, ErrDuplicateKey) {
				t.Fatalf("without the repeated-name check, accepted what ReadHeader refuses: %v", err)
			}
			return
		}
		if looseErr != nil || !reflect.DeepEqual(loose, h) {
			t.Fatalf("without the repeated-name check: %v, %+v; with it %+v", looseErr, loose, h)
		}
		if n := len(h.Tensors); n > 0 && n <= cap(dst) && &loose.Tensors[0] != &dst[:1][0] {
			t.Fatalf("%d tensors fit the given slice of %d but were not written there", n, cap(dst))
		}
		// Key order is a permutation of the tensors.
		seen := make([]bool, len(h.Tensors))
		for k := range h.Tensors {
			i := k
			if h.keyOrder != nil {
				i = int(h.keyOrder[k])
			}
			if seen[i] || h.inKeyOrder(k) != &h.Tensors[i] {
				t.Fatalf("key order %v is not a permutation", h.keyOrder)
			}
			seen[i] = true
		}
		// The scanner is hand-written: whatever it accepts must be JSON.
		if !json.Valid(data[8:h.DataStart]) {
			t.Fatalf("accepted a header that is not JSON: %q", data[8:h.DataStart])
		}
		next := h.DataStart
		for _, tn := range h.Tensors {
			if tn.Begin != next {
				t.Fatalf("tensor %q begins at %d, previous ended at %d", tn.Name, tn.Begin, next)
			}
			esize, ok := DTypeSize(tn.DType)
			n, okn := stformat.ElementCount(tn.Shape)
			if !ok || !okn || int64(n)*esize != tn.End-tn.Begin {
				t.Fatalf("tensor %+v: size does not match shape", tn)
			}
			next = tn.End
		}
		if next != size {
			t.Fatalf("data ends at %d, file is %d bytes", next, size)
		}
	})
}

func FuzzReadIndex(f *testing.F) {
	seedFiles(f, filepath.Join("testdata", "malformed-index", "*.json"))
	f.Add([]byte(`{"metadata":{"total_size":10},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"sub/model-00002-of-00002.safetensors"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Load's lists-only read, whole or in two halves from any point,
		// accepts and refuses the same, with the same error.
		_, wholeErr := readIndex(bytes.NewReader(data), IndexFile, 0, true)
		for _, from := range []int{1, len(data) / 3, len(data) / 2, len(data) - 2} {
			_, err := parseIndexSplit(data, IndexFile, true, max(from, 1))
			if (err == nil) != (wholeErr == nil) || (err != nil && err.Error() != wholeErr.Error()) {
				t.Fatalf("split at %d: %v; whole: %v", from, err, wholeErr)
			}
		}
		ix, err := ReadIndex(bytes.NewReader(data), IndexFile)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is %T, want *FormatError", err, err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted an index that is not JSON: %q", data)
		}
		if len(ix.WeightMap) == 0 {
			t.Fatal("accepted an empty weight_map")
		}
		for name, shard := range ix.WeightMap {
			// independent of checkShardPath: inside the folder, slash-separated
			if name == "" || !fs.ValidPath(shard) || strings.Contains(shard, `\`) || !strings.HasSuffix(shard, ".safetensors") {
				t.Fatalf("accepted %q -> %q", name, shard)
			}
		}
		// The per-shard lists taken while parsing are the weight map, grouped.
		listed := 0
		for shard, c := range ix.perShard {
			if c.name != shard || c.n != len(c.names) {
				t.Fatalf("shard %q: count %+v", shard, c)
			}
			for _, name := range c.names {
				if ix.WeightMap[name] != shard {
					t.Fatalf("%q listed under %q, weight map says %q", name, shard, ix.WeightMap[name])
				}
			}
			listed += c.n
		}
		if listed != len(ix.WeightMap) {
			t.Fatalf("%d names listed by shard, %d in the weight map", listed, len(ix.WeightMap))
		}
		// The lists-only parse (Load's) gives the same lists, each entry's
		// position in the weight map, and whether the names increase.
		lists, err := readIndex(bytes.NewReader(data), IndexFile, 0, true)
		if err != nil {
			t.Fatalf("the lists-only parse refused what ReadIndex accepted: %v", err)
		}
		byPos := make([]string, listed)
		for shard, c := range lists.perShard {
			if full := ix.perShard[shard]; full == nil || !slices.Equal(c.names, full.names) || len(c.at) != len(c.names) {
				t.Fatalf("shard %q: lists-only %+v, full %+v", shard, c, full)
			}
			for k, at := range c.at {
				if at < 0 || int(at) >= listed || byPos[at] != "" || (k > 0 && at <= c.at[k-1]) {
					t.Fatalf("shard %q: positions %v", shard, c.at)
				}
				byPos[at] = c.names[k]
			}
		}
		if lists.increasing != slices.IsSortedFunc(byPos, func(a, b string) int { return cmp.Compare(a, b) }) {
			t.Fatalf("increasing = %t for %q", lists.increasing, byPos)
		}
		if lists.increasing && len(slices.Compact(slices.Clone(byPos))) != len(byPos) {
			t.Fatalf("increasing, but a name repeats: %q", byPos)
		}
		// Read in two halves from any point, the lists are the same.
		for _, from := range []int{1, len(data) / 3, len(data) / 2, len(data) - 2} {
			halves, err := parseIndexSplit(data, IndexFile, true, max(from, 1))
			if err != nil || halves.increasing != lists.increasing || len(halves.perShard) != len(lists.perShard) {
				t.Fatalf("split at %d: %v, %+v; whole: %+v", from, err, halves, lists)
			}
			for shard, c := range lists.perShard {
				h := halves.perShard[shard]
				if h == nil || h.name != c.name || h.n != c.n || !slices.Equal(h.names, c.names) || !slices.Equal(h.at, c.at) {
					t.Fatalf("split at %d, shard %q: %+v, whole %+v", from, shard, h, c)
				}
			}
		}
	})
}
