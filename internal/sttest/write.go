// Package sttest writes safetensors checkpoints for tests and benchmarks:
// small ones with real bytes, or large sparse ones whose tensors are holes.
// Production code never imports it; it imports nothing of phase0's reader, so
// the reader's own tests can use it.
package sttest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"phase0/internal/atomicfile"
	"phase0/internal/stformat"
)

// WriteTensor is one tensor for WriteFile. Nil Data leaves a hole, so large
// checkpoints can be written sparse (their bytes read back as zeros).
type WriteTensor struct {
	Name  string
	DType string
	Shape []int64
	Data  []byte
}

// WriteFile writes a safetensors file with the tensors in the given order,
// the header padded with spaces to an 8-byte boundary. The file appears
// atomically: it is written to a temporary name in the same folder and renamed.
func WriteFile(path string, tensors []WriteTensor, metadata map[string]string) error {
	header, sizes, err := EncodeHeader(tensors, metadata)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return atomicfile.WriteWith(path, func(f *os.File) error {
		var lenBuf [8]byte
		binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(header)))
		if _, err := f.Write(lenBuf[:]); err != nil {
			return err
		}
		if _, err := f.Write(header); err != nil {
			return err
		}
		off := int64(8 + len(header))
		for i, t := range tensors {
			if t.Data != nil {
				if _, err := f.WriteAt(t.Data, off); err != nil {
					return fmt.Errorf("tensor %q: %w", t.Name, err)
				}
			}
			off += sizes[i]
		}
		return f.Truncate(off) // materialises a trailing hole
	})
}

// EncodeHeader builds the padded JSON header (without the 8-byte length) and
// returns each tensor's byte size.
func EncodeHeader(tensors []WriteTensor, metadata map[string]string) ([]byte, []int64, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	if len(metadata) > 0 {
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteString(`"` + stformat.MetadataKey + `":{`)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(&b, k)
			b.WriteByte(':')
			writeJSONString(&b, metadata[k])
		}
		b.WriteByte('}')
	}
	sizes := make([]int64, len(tensors))
	seen := make(map[string]bool, len(tensors))
	var off int64
	for i, t := range tensors {
		if t.Name == "" || t.Name == stformat.MetadataKey {
			return nil, nil, fmt.Errorf("tensor %d: %q is not a usable tensor name", i, t.Name)
		}
		if seen[t.Name] {
			return nil, nil, fmt.Errorf("tensor %q given twice", t.Name)
		}
		seen[t.Name] = true
		esize, ok := stformat.DTypeSize(t.DType)
		if !ok {
			return nil, nil, fmt.Errorf("tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		for _, d := range t.Shape {
			if d < 0 {
				return nil, nil, fmt.Errorf("tensor %q: shape %v has a negative dim", t.Name, t.Shape)
			}
		}
		elems, ok := stformat.ElementCount(t.Shape)
		hi, nbytes := bits.Mul64(elems, uint64(esize))
		if !ok || hi != 0 || nbytes > math.MaxInt64-uint64(off) {
			return nil, nil, fmt.Errorf("tensor %q: shape %v of %s is too large", t.Name, t.Shape, t.DType)
		}
		if t.Data != nil && int64(len(t.Data)) != int64(nbytes) {
			return nil, nil, fmt.Errorf("tensor %q: shape %v of %s needs %d bytes, data has %d", t.Name, t.Shape, t.DType, nbytes, len(t.Data))
		}
		sizes[i] = int64(nbytes)
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		writeJSONString(&b, t.Name)
		b.WriteString(`:{"dtype":"` + t.DType + `","shape":[`)
		for j, d := range t.Shape {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatInt(d, 10))
		}
		fmt.Fprintf(&b, `],"data_offsets":[%d,%d]}`, off, off+int64(nbytes))
		off += int64(nbytes)
	}
	b.WriteByte('}')
	for (8+b.Len())%8 != 0 {
		b.WriteByte(' ')
	}
	return b.Bytes(), sizes, nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a string always marshals
	b.Write(enc)
}

// WriteIndex writes a model.safetensors.index.json with metadata.total_size
// and the weight map (keys sorted), atomically.
func WriteIndex(path string, weightMap map[string]string, totalSize int64) error {
	doc := struct {
		Metadata  map[string]int64  `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}{map[string]int64{"total_size": totalSize}, weightMap}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	data = append(data, '\n')
	return atomicfile.WriteWith(path, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// WriteSharded writes tensors, in order, into the given number of shards
// named like the hub's (model-00001-of-00004.safetensors) plus the index.
// Each shard's header lists its tensors sorted by name, as the hub's
// checkpoints do.
// Tensors without Data are holes, so a checkpoint of real size costs only
// its headers.
func WriteSharded(dir string, tensors []WriteTensor, shards int) error {
	if shards < 1 || shards > len(tensors) {
		return fmt.Errorf("%d shards for %d tensors", shards, len(tensors))
	}
	weightMap := make(map[string]string, len(tensors))
	var total int64
	for s := range shards {
		part := slices.SortedFunc(slices.Values(tensors[s*len(tensors)/shards:(s+1)*len(tensors)/shards]),
			func(a, b WriteTensor) int { return strings.Compare(a.Name, b.Name) })
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", s+1, shards)
		for _, t := range part {
			weightMap[t.Name] = name
		}
		_, sizes, err := EncodeHeader(part, nil)
		if err != nil {
			return fmt.Errorf("shard %s: %w", name, err)
		}
		for _, n := range sizes {
			total += n
		}
		if err := WriteFile(filepath.Join(dir, name), part, map[string]string{"format": "pt"}); err != nil {
			return err
		}
	}
	return WriteIndex(filepath.Join(dir, stformat.IndexFile), weightMap, total)
}

// U8 is an n-byte U8 tensor of zeros: the smallest tensor whose size a test chooses.
func U8(name string, n int) WriteTensor {
	return WriteTensor{Name: name, DType: "U8", Shape: []int64{int64(n)}, Data: make([]byte, n)}
}
