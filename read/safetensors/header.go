package safetensors

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strings"
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
	// keyOrder[k] is the index in Tensors of the header's k-th key, when
	// key order and data order differ (nil: they are the same).
	keyOrder []int32
}

// inKeyOrder returns the k-th tensor in the order the header lists them.
func (h *Header) inKeyOrder(k int) *Tensor {
	return &h.Tensors[h.keyPos(k)]
}

// keyPos returns the index in Tensors of the header's k-th key.
func (h *Header) keyPos(k int) int {
	if h.keyOrder != nil {
		return int(h.keyOrder[k])
	}
	return k
}

// ReadHeader reads and validates the header of the safetensors file r of the
// given size. file names the file in errors and is copied into each Tensor.
// Only the first 8+header-length bytes of r are read.
func ReadHeader(r io.ReaderAt, size int64, file string) (*Header, error) {
	return readHeader(r, size, file, headerOpts{dupKeys: true})
}

// ExtraDTypes are dtypes beyond safetensors' own that a reader of a
// format built on it accepts (a FastFlowLM bundle's Q4NX), each with the
// byte size of a tensor of a shape (false: the shape cannot hold it).
type ExtraDTypes map[string]func(shape []int64) (int64, bool)

// ReadHeaderWith is ReadHeader accepting the extra dtypes too.
func ReadHeaderWith(r io.ReaderAt, size int64, file string, extra ExtraDTypes) (*Header, error) {
	return readHeader(r, size, file, headerOpts{dupKeys: true, extra: extra})
}

// headerOpts are Load's ways of reading a header.
type headerOpts struct {
	// dupKeys refuses a tensor name repeated in the header. Without it the
	// caller finds repeats: Load inserts every name into the inventory's
	// map anyway, and one map operation per tensor is cheaper than two; on
	// a repeat it reads the header again with the check on, so the error is
	// ReadHeader's.
	dupKeys bool
	// dst receives the tensors when it has room: Header.Tensors is then
	// dst[:n] (Load parses every shard into its own part of one slice).
	dst []Tensor
	// buf, when set, is a read buffer kept from header to header (grown
	// when short); the strings kept are then copied out of it, names into
	// one allocation per header, so a deep checkpoint's headers do not
	// each take fresh memory that only their names use.
	buf *[]byte
	// extra are dtypes accepted beyond safetensors' own (ReadHeaderWith).
	extra ExtraDTypes
}

// readHeader is ReadHeader, read Load's way.
func readHeader(r io.ReaderAt, size int64, file string, opts headerOpts) (*Header, error) {
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
	var buf []byte
	if opts.buf != nil && uint64(cap(*opts.buf)) >= n {
		buf = (*opts.buf)[:n]
	} else {
		buf = make([]byte, n)
		if opts.buf != nil {
			*opts.buf = buf
		}
	}
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
	p := &headerParser{jsonScanner: newScanner(buf, file, 8, "header"), dupKeys: opts.dupKeys, dst: opts.dst[:0], extra: opts.extra}
	md, tensors, ats, err := p.parse()
	if err != nil {
		return nil, err
	}
	tensors, keyOrder, err := layout(tensors, ats, file, size, dataStart, opts.extra)
	if err != nil {
		return nil, err
	}
	if opts.buf != nil {
		md = ownStrings(tensors, md)
	}
	return &Header{Tensors: tensors, Metadata: md, DataStart: dataStart, keyOrder: keyOrder}, nil
}

// ownStrings copies the names and metadata that point into a header's
// buffer out of it: names into one string, dtypes are the constants, and
// the few metadata entries are cloned.
func ownStrings(ts []Tensor, md map[string]string) map[string]string {
	total := 0
	for i := range ts {
		total += len(ts[i].Name)
	}
	var b strings.Builder
	b.Grow(total)
	for i := range ts {
		b.WriteString(ts[i].Name)
	}
	names := b.String()
	at := 0
	for i := range ts {
		n := len(ts[i].Name)
		ts[i].Name, at = names[at:at+n], at+n
		ts[i].DType = stformat.DTypeName(ts[i].DType)
	}
	if md == nil {
		return nil
	}
	owned := make(map[string]string, len(md))
	for k, v := range md {
		owned[strings.Clone(k)] = strings.Clone(v)
	}
	return owned
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
}

// headerParser reads a header's JSON, whose shape is known: an object of
// tensor entries plus an optional __metadata__ object of strings. Repeated
// keys, which a map unmarshal would silently merge, are refused.
type headerParser struct {
	*jsonScanner
	shapes  []int64  // one backing array for every tensor's shape
	dupKeys bool     // refuse a repeated tensor name here (else the caller does)
	dst     []Tensor // where the tensors go, when it has room
	extra   ExtraDTypes
}

// parse returns the tensors in key order, offsets still relative to the
// data section, and each entry's header offset (for errors).
func (p *headerParser) parse() (md map[string]string, ts []Tensor, ats []int64, err error) {
	p.pos = 1 // ReadHeader checked that the header starts with '{'
	// Every tensor entry opens one object, so counting '{' (a vectorised
	// single-byte count) sizes the slices and map with no growth; names
	// holding '{' only make the estimate generous.
	n := bytes.Count(p.buf, []byte{'{'})
	ts, ats = p.dst, make([]int64, 0, n)
	if cap(ts) == 0 {
		ts = make([]Tensor, 0, n)
	}
	p.shapes = make([]int64, 0, 2*n+1)
	var seen map[string]struct{}
	if p.dupKeys {
		seen = make(map[string]struct{}, n)
	}
	haveMD := false
	if !p.first('}') {
		return nil, ts, ats, p.end()
	}
	for {
		p.ws()
		at := p.pos
		name, err := p.key()
		if err != nil {
			return nil, nil, nil, err
		}
		if name == metadataKey {
			if haveMD {
				return nil, nil, nil, p.errAt(p.pos, ErrDuplicateKey, "key %q appears twice in the header", name)
			}
			haveMD = true
			if md, err = p.metadata(); err != nil {
				return nil, nil, nil, err
			}
		} else {
			if seen != nil {
				size := len(seen)
				if seen[name] = struct{}{}; len(seen) == size {
					return nil, nil, nil, p.errAt(p.pos, ErrDuplicateKey, "key %q appears twice in the header", name)
				}
			}
			rt, err := p.tensor(name)
			if err != nil {
				return nil, nil, nil, err
			}
			ts = append(ts, Tensor{Name: rt.name, DType: rt.dtype, Shape: rt.shape, Begin: rt.begin, End: rt.end})
			ats = append(ats, p.base+int64(at))
		}
		more, err := p.more('}')
		if err != nil {
			return nil, nil, nil, err
		}
		if !more {
			break
		}
	}
	return md, ts, ats, p.end()
}

// gotWant reports the value at the current position as "what: got X, want Y".
func (p *headerParser) gotWant(what, want string) error {
	at := p.pos
	desc, err := p.describe()
	if err != nil {
		return err
	}
	return p.errAt(at, nil, "%s: got %s, want %s", what, desc, want)
}

func (p *headerParser) metadata() (map[string]string, error) {
	if p.isNull() { // "__metadata__": null is the same as absent
		return nil, nil
	}
	if !p.consume('{') {
		return nil, p.gotWant(metadataKey, "an object of strings")
	}
	md := map[string]string{}
	if !p.first('}') {
		return md, nil
	}
	for {
		k, err := p.key()
		if err != nil {
			return nil, err
		}
		if _, dup := md[k]; dup {
			return nil, p.errAt(p.pos, ErrDuplicateKey, "%s key %q appears twice", metadataKey, k)
		}
		if p.ws() != '"' {
			return nil, p.gotWant(fmt.Sprintf("%s[%q]", metadataKey, k), "a string")
		}
		if md[k], err = p.str(); err != nil {
			return nil, err
		}
		more, err := p.more('}')
		if err != nil {
			return nil, err
		}
		if !more {
			return md, nil
		}
	}
}

func (p *headerParser) tensor(name string) (rawTensor, error) {
	rt := rawTensor{name: name}
	if !p.consume('{') {
		return rt, p.gotWant(fmt.Sprintf("tensor %q", name), "an object")
	}
	var haveDType, haveShape, haveOffsets bool
	more := p.first('}')
	for more {
		field, err := p.field()
		if err != nil {
			return rt, err
		}
		switch field {
		case "dtype":
			if haveDType {
				return rt, p.errAt(p.pos, ErrDuplicateKey, "tensor %q: field dtype appears twice", name)
			}
			haveDType = true
			if p.ws() != '"' {
				return rt, p.gotWant(fmt.Sprintf("tensor %q: dtype", name), "a string")
			}
			at := p.pos
			s, err := p.str()
			if err != nil {
				return rt, err
			}
			if _, known := DTypeSize(s); !known && p.extra[s] == nil {
				return rt, p.errAt(at, ErrUnknownDType, "tensor %q: unknown dtype %q", name, s)
			}
			rt.dtype = s
		case "shape":
			if haveShape {
				return rt, p.errAt(p.pos, ErrDuplicateKey, "tensor %q: field shape appears twice", name)
			}
			haveShape = true
			start := len(p.shapes)
			if err := p.intArray(name, "shape", func(v int64) { p.shapes = append(p.shapes, v) }); err != nil {
				return rt, err
			}
			rt.shape = p.shapes[start:len(p.shapes):len(p.shapes)] // a scalar's is empty, not nil
		case "data_offsets":
			if haveOffsets {
				return rt, p.errAt(p.pos, ErrDuplicateKey, "tensor %q: field data_offsets appears twice", name)
			}
			haveOffsets = true
			at := p.pos
			var offs [2]int64
			n := 0
			if err := p.intArray(name, "data_offsets", func(v int64) {
				if n < len(offs) {
					offs[n] = v
				}
				n++
			}); err != nil {
				return rt, err
			}
			if n != 2 {
				return rt, p.errAt(at, nil, "tensor %q: data_offsets has %d values, want [begin, end]", name, n)
			}
			rt.begin, rt.end = offs[0], offs[1]
		default:
			return rt, p.errAt(p.pos, nil, "tensor %q: unknown field %q (want dtype, shape, data_offsets)", name, field)
		}
		if more, err = p.more('}'); err != nil {
			return rt, err
		}
	}
	switch {
	case !haveDType:
		return rt, p.errAt(p.pos, nil, "tensor %q: missing field dtype", name)
	case !haveShape:
		return rt, p.errAt(p.pos, nil, "tensor %q: missing field shape", name)
	case !haveOffsets:
		return rt, p.errAt(p.pos, nil, "tensor %q: missing field data_offsets", name)
	}
	return rt, nil
}

// field reads a tensor entry's key. The three keys are matched as written
// by every writer (quoted, no white space before the colon) before the
// general way, which decodes any spelling to the same strings.
func (p *headerParser) field() (string, error) {
	if b := p.buf[p.pos:]; len(b) >= 8 && b[0] == '"' {
		switch {
		case string(b[:8]) == `"dtype":`:
			p.pos += 8
			return "dtype", nil
		case string(b[:8]) == `"shape":`:
			p.pos += 8
			return "shape", nil
		case len(b) >= 15 && string(b[:15]) == `"data_offsets":`:
			p.pos += 15
			return "data_offsets", nil
		}
	}
	return p.key()
}

// intArray reads an array of non-negative integers, handing each to add.
func (p *headerParser) intArray(name, field string, add func(int64)) error {
	if !p.consume('[') {
		return p.gotWant(fmt.Sprintf("tensor %q: %s", name, field), `"["`)
	}
	if !p.first(']') {
		return nil
	}
	for i := 0; ; i++ {
		v, err := p.uint(name, field, i)
		if err != nil {
			return err
		}
		add(v)
		more, err := p.more(']')
		if err != nil || !more {
			return err
		}
	}
}

// checkSize checks that t's data_offsets span exactly what its shape and
// dtype need (a dtype of extra sized by its own rule), at the header
// offset at.
func checkSize(t *Tensor, at int64, file string, extra ExtraDTypes) error {
	bad := func(format string, args ...any) error {
		return &FormatError{File: file, Offset: at, Reason: fmt.Sprintf("tensor %q: ", t.Name) + fmt.Sprintf(format, args...)}
	}
	if t.Begin > t.End {
		return bad("data_offsets [%d, %d]: begin is after end", t.Begin, t.End)
	}
	elems, ok := stformat.ElementCount(t.Shape)
	if !ok {
		return bad("shape %v: element count overflows", t.Shape)
	}
	var nbytes uint64
	if esize, known := DTypeSize(t.DType); known {
		var hi uint64
		hi, nbytes = bits.Mul64(elems, uint64(esize))
		if hi != 0 || nbytes > math.MaxInt64 {
			return bad("shape %v of %s: byte size overflows", t.Shape, t.DType)
		}
	} else {
		n, ok := extra[t.DType](t.Shape)
		if !ok || n < 0 {
			return bad("shape %v cannot hold %s data", t.Shape, t.DType)
		}
		nbytes = uint64(n)
	}
	if span := t.End - t.Begin; uint64(span) != nbytes {
		return bad("shape %v of %s needs %d bytes but data_offsets [%d, %d] span %d", t.Shape, t.DType, nbytes, t.Begin, t.End, span)
	}
	return nil
}

// layout checks each tensor's size against its shape and dtype, checks that
// the data regions tile the data section exactly, and returns the tensors with
// absolute offsets, sorted by Begin, and (when that is not the header's key
// order) where each key went.
func layout(ts []Tensor, ats []int64, file string, size, dataStart int64, extra ExtraDTypes) ([]Tensor, []int32, error) {
	dataLen := size - dataStart
	for i := range ts {
		if err := checkSize(&ts[i], ats[i], file, extra); err != nil {
			return nil, nil, err
		}
	}
	byOffset := func(a, b *Tensor) int {
		if c := cmp.Compare(a.Begin, b.Begin); c != 0 {
			return c
		}
		return cmp.Compare(a.End, b.End)
	}
	var keyOrder []int32
	if !slices.IsSortedFunc(ts, func(a, b Tensor) int { return byOffset(&a, &b) }) { // writers usually emit offset order
		perm := make([]int32, len(ts))
		for i := range perm {
			perm[i] = int32(i)
		}
		slices.SortStableFunc(perm, func(a, b int32) int { return byOffset(&ts[a], &ts[b]) })
		sorted, sortedAts := make([]Tensor, len(ts)), make([]int64, len(ts))
		keyOrder = make([]int32, len(ts))
		for i, k := range perm {
			sorted[i], sortedAts[i], keyOrder[k] = ts[k], ats[k], int32(i)
		}
		copy(ts, sorted) // in place: ts may be the caller's slice
		ats = sortedAts
	}
	var next int64
	prev := ""
	for i, t := range ts {
		switch {
		case t.Begin > next:
			return nil, nil, &FormatError{File: file, Offset: ats[i], Reason: fmt.Sprintf("tensor %q: gap: data begins at %d but the previous tensor ends at %d", t.Name, t.Begin, next),
				Gap: &Gap{Begin: next, End: t.Begin, After: prev, Before: t.Name, Tensors: slices.Clone(ts)}}
		case t.Begin < next:
			return nil, nil, &FormatError{File: file, Offset: ats[i], Reason: fmt.Sprintf("tensor %q: data [%d, %d] overlaps tensor %q ending at %d", t.Name, t.Begin, t.End, prev, next)}
		}
		next, prev = t.End, t.Name
	}
	switch {
	case next > dataLen:
		// Name the first tensor the file cuts: what a truncated download lost.
		cut := slices.IndexFunc(ts, func(t Tensor) bool { return t.End > dataLen })
		lost := ""
		if rest := len(ts) - cut - 1; rest > 0 {
			lost = fmt.Sprintf(" (and the %d tensors after it)", rest)
		}
		return nil, nil, &FormatError{File: file, Offset: size, Reason: fmt.Sprintf("tensor %q%s: data [%d, %d] runs past the end: tensor data ends at %d but the file has only %d data bytes (truncated)",
			ts[cut].Name, lost, ts[cut].Begin, ts[cut].End, next, dataLen), Err: ErrTruncated}
	case next < dataLen:
		return nil, nil, &FormatError{File: file, Offset: dataStart + next, Reason: fmt.Sprintf("%d trailing bytes after the tensor data (data ends at %d of %d)", dataLen-next, next, dataLen)}
	}
	for i := range ts {
		ts[i].File, ts[i].Begin, ts[i].End = file, dataStart+ts[i].Begin, dataStart+ts[i].End
	}
	return ts, keyOrder, nil
}
