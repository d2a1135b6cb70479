package safetensors

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"slices"
)

// compareChunk bounds the memory SameBytes uses, whatever the tensor size.
const compareChunk = 4 << 20

// openAt opens a tensor's file for positioned reads.
func openAt(fsys fs.FS, t Tensor) (io.ReaderAt, io.Closer, error) {
	f, err := fsys.Open(t.File)
	if err != nil {
		return nil, nil, fmt.Errorf("opening %s for tensor %s: %w", t.File, t.Name, err)
	}
	ra, ok := f.(io.ReaderAt)
	if !ok {
		f.Close()
		return nil, nil, fmt.Errorf("%s: the file system gives no positioned reads", t.File)
	}
	return ra, f, nil
}

// SameBytes reports whether two tensors hold byte-identical data with the
// same dtype and shape. Only these two tensors are read, in bounded chunks.
func SameBytes(fsys fs.FS, a, b Tensor) (bool, error) {
	if a.DType != b.DType || !slices.Equal(a.Shape, b.Shape) || a.Bytes() != b.Bytes() {
		return false, nil
	}
	ra, ca, err := openAt(fsys, a)
	if err != nil {
		return false, err
	}
	defer ca.Close()
	rb, cb, err := openAt(fsys, b)
	if err != nil {
		return false, err
	}
	defer cb.Close()
	n := a.Bytes()
	bufA, bufB := make([]byte, min(n, compareChunk)), make([]byte, min(n, compareChunk))
	for off := int64(0); off < n; off += int64(len(bufA)) {
		k := min(int64(len(bufA)), n-off)
		if err := readFullAt(ra, bufA[:k], a.Begin+off); err != nil {
			return false, fmt.Errorf("reading tensor %s in %s: %w", a.Name, a.File, err)
		}
		if err := readFullAt(rb, bufB[:k], b.Begin+off); err != nil {
			return false, fmt.Errorf("reading tensor %s in %s: %w", b.Name, b.File, err)
		}
		if !bytes.Equal(bufA[:k], bufB[:k]) {
			return false, nil
		}
	}
	return true, nil
}

// ReadElements returns the raw bytes of the elements of t at the given
// row-major flat indices, one slice of DTypeSize bytes each.
func ReadElements(fsys fs.FS, t Tensor, flat []int64) ([][]byte, error) {
	size, ok := DTypeSize(t.DType)
	if !ok || size <= 0 {
		return nil, fmt.Errorf("tensor %s: dtype %s has no fixed element size", t.Name, t.DType)
	}
	ra, c, err := openAt(fsys, t)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	out := make([][]byte, len(flat))
	for i, idx := range flat {
		off := t.Begin + idx*size
		if idx < 0 || off+size > t.End {
			return nil, fmt.Errorf("tensor %s: element %d is outside its %d bytes", t.Name, idx, t.Bytes())
		}
		out[i] = make([]byte, size)
		if err := readFullAt(ra, out[i], off); err != nil {
			return nil, fmt.Errorf("reading tensor %s in %s: %w", t.Name, t.File, err)
		}
	}
	return out, nil
}
