package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"

	"phase0/internal/stformat"
)

// MaxHeaderSize is the largest JSON header accepted, in bytes. It is the cap
// the reference implementation enforces (100,000,000 bytes), so anything it
// refuses we refuse too, before allocating.
const MaxHeaderSize = 100_000_000

// metadataKey is the reserved header key holding free-form string metadata.
const metadataKey = stformat.MetadataKey

// Tensor locates one tensor's bytes. Begin and End are absolute offsets in
// File (8 + header length + data_offsets).
type Tensor struct {
	Name  string
	DType string
	Shape []int64
	File  string // path relative to the model folder
	Begin int64
	End   int64
}

// Bytes is the tensor's size on disk.
func (t Tensor) Bytes() int64 { return t.End - t.Begin }

// Header is one safetensors file's parsed and validated header.
type Header struct {
	Tensors   []Tensor // sorted by Begin
	Metadata  map[string]string
	DataStart int64 // 8 + header length
}

// ReadHeader reads and validates the header of the safetensors file r of the
// given size. file names the file in errors and is copied into each Tensor.
// Only the first 8+header-length bytes of r are read.
func ReadHeader(r io.ReaderAt, size int64, file string) (*Header, error) {
	if size < 8 {
		return nil, &FormatError{File: file, Reason: fmt.Sprintf("file is %d bytes, too short for the 8-byte header length", size), Err: ErrTruncated}
	}
	var lenBuf [8]byte
	if err := readFullAt(r, lenBuf[:], 0); err != nil {
		return nil, &FormatError{File: file, Reason: "reading the header length: " + err.Error(), Err: err}
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > MaxHeaderSize {
		return nil, &FormatError{File: file, Reason: fmt.Sprintf("header length %d exceeds the %d-byte cap", n, MaxHeaderSize), Err: ErrHeaderTooLarge}
	}
	if n > uint64(size-8) {
		return nil, &FormatError{File: file, Reason: fmt.Sprintf("header length %d runs past the end of the %d-byte file", n, size), Err: ErrTruncated}
	}
	if n < 2 {
		return nil, &FormatError{File: file, Offset: 8, Reason: fmt.Sprintf("header length %d cannot hold a JSON object", n)}
	}
	buf := make([]byte, n)
	if err := readFullAt(r, buf, 8); err != nil {
		return nil, &FormatError{File: file, Offset: 8, Reason: "reading the header: " + err.Error(), Err: err}
	}
	if buf[0] != '{' {
		return nil, &FormatError{File: file, Offset: 8, Reason: fmt.Sprintf("header starts with %q, want '{'", buf[0])}
	}
	if !utf8.Valid(buf) {
		return nil, &FormatError{File: file, Offset: 8, Reason: "header is not valid UTF-8"}
	}
	dataStart := int64(8 + n)
	p := &headerParser{jsonWalker{dec: json.NewDecoder(bytes.NewReader(buf)), file: file, base: 8, what: "header"}}
	p.dec.UseNumber()
	md, raws, err := p.parse()
	if err != nil {
		return nil, err
	}
	tensors, err := layout(raws, file, size, dataStart)
	if err != nil {
		return nil, err
	}
	return &Header{Tensors: tensors, Metadata: md, DataStart: dataStart}, nil
}

// readFullAt reads len(p) bytes at off, treating a short read as ErrTruncated.
func readFullAt(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("read %d of %d bytes at offset %d: %w", n, len(p), off, ErrTruncated)
	}
	return err
}

// rawTensor is one header entry before offsets are made absolute.
type rawTensor struct {
	name       string
	dtype      string
	shape      []int64
	begin, end int64 // relative to the data section
	at         int64 // header offset of the entry, for errors
}

// headerParser walks a header's JSON; offsets in its errors count the
// 8-byte length prefix.
type headerParser struct{ jsonWalker }

// parse walks the header token by token so repeated keys, which a map
// unmarshal would silently merge, are caught.
func (p *headerParser) parse() (md map[string]string, raws []rawTensor, err error) {
	if err := p.delim('{', "header"); err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	for p.dec.More() {
		at := 8 + p.dec.InputOffset()
		name, err := p.key()
		if err != nil {
			return nil, nil, err
		}
		if seen[name] {
			return nil, nil, p.errf(ErrDuplicateKey, "key %q appears twice in the header", name)
		}
		seen[name] = true
		if name == metadataKey {
			if md, err = p.metadata(); err != nil {
				return nil, nil, err
			}
			continue
		}
		rt, err := p.tensor(name)
		if err != nil {
			return nil, nil, err
		}
		rt.at = at
		raws = append(raws, rt)
	}
	if err := p.delim('}', "end of header"); err != nil {
		return nil, nil, err
	}
	if tok, err := p.dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, nil, p.errf(nil, "after the header object: %v", err)
		}
		return nil, nil, p.errf(nil, "unexpected %s after the header object", describe(tok))
	}
	return md, raws, nil
}

func (p *headerParser) metadata() (map[string]string, error) {
	tok, err := p.token()
	if err != nil {
		return nil, err
	}
	if tok == nil { // "__metadata__": null is the same as absent
		return nil, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, p.errf(nil, "%s: got %s, want an object of strings", metadataKey, describe(tok))
	}
	md := map[string]string{}
	for p.dec.More() {
		k, err := p.key()
		if err != nil {
			return nil, err
		}
		if _, dup := md[k]; dup {
			return nil, p.errf(ErrDuplicateKey, "%s key %q appears twice", metadataKey, k)
		}
		tok, err := p.token()
		if err != nil {
			return nil, err
		}
		v, ok := tok.(string)
		if !ok {
			return nil, p.errf(nil, "%s[%q]: got %s, want a string", metadataKey, k, describe(tok))
		}
		md[k] = v
	}
	return md, p.delim('}', metadataKey)
}

func (p *headerParser) tensor(name string) (rawTensor, error) {
	rt := rawTensor{name: name}
	tok, err := p.token()
	if err != nil {
		return rt, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return rt, p.errf(nil, "tensor %q: got %s, want an object", name, describe(tok))
	}
	var haveDType, haveShape, haveOffsets bool
	for p.dec.More() {
		field, err := p.key()
		if err != nil {
			return rt, err
		}
		switch field {
		case "dtype":
			if haveDType {
				return rt, p.errf(ErrDuplicateKey, "tensor %q: field dtype appears twice", name)
			}
			haveDType = true
			tok, err := p.token()
			if err != nil {
				return rt, err
			}
			s, ok := tok.(string)
			if !ok {
				return rt, p.errf(nil, "tensor %q: dtype: got %s, want a string", name, describe(tok))
			}
			if _, known := DTypeSize(s); !known {
				return rt, p.errf(ErrUnknownDType, "tensor %q: unknown dtype %q", name, s)
			}
			rt.dtype = s
		case "shape":
			if haveShape {
				return rt, p.errf(ErrDuplicateKey, "tensor %q: field shape appears twice", name)
			}
			haveShape = true
			if rt.shape, err = p.intArray(name, "shape"); err != nil {
				return rt, err
			}
			if rt.shape == nil {
				rt.shape = []int64{} // a scalar
			}
		case "data_offsets":
			if haveOffsets {
				return rt, p.errf(ErrDuplicateKey, "tensor %q: field data_offsets appears twice", name)
			}
			haveOffsets = true
			offs, err := p.intArray(name, "data_offsets")
			if err != nil {
				return rt, err
			}
			if len(offs) != 2 {
				return rt, p.errf(nil, "tensor %q: data_offsets has %d values, want [begin, end]", name, len(offs))
			}
			rt.begin, rt.end = offs[0], offs[1]
		default:
			return rt, p.errf(nil, "tensor %q: unknown field %q (want dtype, shape, data_offsets)", name, field)
		}
	}
	if err := p.delim('}', fmt.Sprintf("tensor %q", name)); err != nil {
		return rt, err
	}
	for _, f := range []struct {
		have bool
		name string
	}{{haveDType, "dtype"}, {haveShape, "shape"}, {haveOffsets, "data_offsets"}} {
		if !f.have {
			return rt, p.errf(nil, "tensor %q: missing field %s", name, f.name)
		}
	}
	return rt, nil
}

// intArray reads an array of non-negative integers.
func (p *headerParser) intArray(name, field string) ([]int64, error) {
	if err := p.delim('[', fmt.Sprintf("tensor %q: %s", name, field)); err != nil {
		return nil, err
	}
	var out []int64
	for p.dec.More() {
		tok, err := p.token()
		if err != nil {
			return nil, err
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, p.errf(nil, "tensor %q: %s[%d]: got %s, want an integer", name, field, len(out), describe(tok))
		}
		v, err := strconv.ParseInt(num.String(), 10, 64)
		if err != nil {
			return nil, p.errf(nil, "tensor %q: %s[%d] = %s is not an integer in range", name, field, len(out), num)
		}
		if v < 0 {
			return nil, p.errf(nil, "tensor %q: %s[%d] = %d is negative", name, field, len(out), v)
		}
		out = append(out, v)
	}
	return out, p.delim(']', fmt.Sprintf("tensor %q: %s", name, field))
}

// layout checks each tensor's size against its shape and dtype, checks that
// the data regions tile the data section exactly, and returns the tensors with
// absolute offsets, sorted by Begin.
func layout(raws []rawTensor, file string, size, dataStart int64) ([]Tensor, error) {
	dataLen := size - dataStart
	for i := range raws {
		t := &raws[i]
		bad := func(format string, args ...any) error {
			return &FormatError{File: file, Offset: t.at, Reason: fmt.Sprintf("tensor %q: ", t.name) + fmt.Sprintf(format, args...)}
		}
		if t.begin > t.end {
			return nil, bad("data_offsets [%d, %d]: begin is after end", t.begin, t.end)
		}
		elems, ok := elementCount(t.shape)
		if !ok {
			return nil, bad("shape %v: element count overflows", t.shape)
		}
		esize, _ := DTypeSize(t.dtype)
		hi, nbytes := bits.Mul64(elems, uint64(esize))
		if hi != 0 || nbytes > math.MaxInt64 {
			return nil, bad("shape %v of %s: byte size overflows", t.shape, t.dtype)
		}
		if span := t.end - t.begin; uint64(span) != nbytes {
			return nil, bad("shape %v of %s needs %d bytes but data_offsets [%d, %d] span %d", t.shape, t.dtype, nbytes, t.begin, t.end, span)
		}
	}
	slices.SortStableFunc(raws, func(a, b rawTensor) int {
		if c := cmpInt(a.begin, b.begin); c != 0 {
			return c
		}
		return cmpInt(a.end, b.end)
	})
	var next int64
	prev := ""
	for _, t := range raws {
		switch {
		case t.begin > next:
			return nil, &FormatError{File: file, Offset: t.at, Reason: fmt.Sprintf("tensor %q: gap: data begins at %d but the previous tensor ends at %d", t.name, t.begin, next)}
		case t.begin < next:
			return nil, &FormatError{File: file, Offset: t.at, Reason: fmt.Sprintf("tensor %q: data [%d, %d] overlaps tensor %q ending at %d", t.name, t.begin, t.end, prev, next)}
		}
		next, prev = t.end, t.name
	}
	switch {
	case next > dataLen:
		return nil, &FormatError{File: file, Offset: size, Reason: fmt.Sprintf("tensor data ends at %d but the file has only %d data bytes", next, dataLen), Err: ErrTruncated}
	case next < dataLen:
		return nil, &FormatError{File: file, Offset: dataStart + next, Reason: fmt.Sprintf("%d trailing bytes after the tensor data (data ends at %d of %d)", dataLen-next, next, dataLen)}
	}
	out := make([]Tensor, len(raws))
	for i, t := range raws {
		out[i] = Tensor{Name: t.name, DType: t.dtype, Shape: t.shape, File: file, Begin: dataStart + t.begin, End: dataStart + t.end}
	}
	return out, nil
}

// elementCount multiplies the dims, reporting false on overflow.
func elementCount(shape []int64) (uint64, bool) {
	n := uint64(1)
	for _, d := range shape {
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 {
			return 0, false
		}
		n = lo
	}
	return n, true
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// describe names a JSON token's kind for error messages.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", string(v))
	case string:
		return fmt.Sprintf("string %q", v)
	case json.Number:
		return "number " + v.String()
	case bool:
		return fmt.Sprintf("%t", v)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}
