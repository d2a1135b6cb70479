package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"phase0/internal/stformat"
)

// IndexFile is the name of the sharded-checkpoint index in a model folder.
const IndexFile = stformat.IndexFile

// maxIndexSize bounds how much of an index file is read; real ones are well
// under a megabyte even for very large models.
const maxIndexSize = 64 << 20

// Index is a parsed model.safetensors.index.json.
type Index struct {
	WeightMap map[string]string // tensor name → shard path relative to the model folder
	// Metadata is the free-form "metadata" object. Numbers are json.Number so
	// large integers survive; use TotalSize for the usual field.
	Metadata map[string]any
	// perShard counts the weight map's tensors per shard, as parsed (nil
	// for an Index built by hand: counted on first use).
	perShard map[string]*shardCount
	// increasing: the weight map's names, as written, are in strictly
	// increasing byte order (so no name is repeated), as writers that
	// sort their keys leave them.
	increasing bool
}

// shardCount is one shard of the weight map: its name (every entry's value
// is this one string), how many tensors are assigned to it and, when parsed,
// their names in the index's order and (for the lists-only parse) the
// position of each in the weight map.
type shardCount struct {
	name  string
	n     int
	names []string
	at    []int32
}

// shardCounts returns how many tensors the weight map assigns to each shard.
func (ix *Index) shardCounts() map[string]*shardCount {
	total := 0
	for _, c := range ix.perShard {
		total += c.n
	}
	if ix.perShard == nil || total != len(ix.WeightMap) {
		ix.perShard = map[string]*shardCount{}
		for _, s := range ix.WeightMap {
			c := ix.perShard[s]
			if c == nil {
				c = &shardCount{name: s}
				ix.perShard[s] = c
			}
			c.n++
		}
	}
	return ix.perShard
}

// TotalSize returns metadata.total_size when it is a non-negative integer.
func (ix *Index) TotalSize() (int64, bool) {
	switch v := ix.Metadata["total_size"].(type) {
	case json.Number:
		n, err := strconv.ParseInt(v.String(), 10, 64)
		return n, err == nil && n >= 0
	case float64:
		return int64(v), v >= 0 && v == float64(int64(v))
	}
	return 0, false
}

// Shards returns the distinct shard paths of the weight map, sorted.
func (ix *Index) Shards() []string {
	return slices.Sorted(maps.Keys(ix.shardCounts()))
}

// ReadIndex parses an index file, reading at most maxIndexSize bytes of r.
// Repeated keys, a missing or empty weight_map, non-string shard names and
// unsafe shard paths are errors. Unknown top-level keys are skipped.
func ReadIndex(r io.Reader, file string) (*Index, error) {
	return readIndex(r, file, 0, false)
}

// readIndex is ReadIndex with the file's size when known (0 otherwise): the
// buffer is then allocated once instead of grown (and cleared) step by step.
// listsOnly builds no WeightMap (and so cannot see a repeated name): only
// the per-shard lists, for a Load that checks every name against the
// headers anyway and asks ReadIndex for the error when anything is off.
func readIndex(r io.Reader, file string, size int64, listsOnly bool) (*Index, error) {
	buf := make([]byte, 0, min(max(size, 0), maxIndexSize)+1)
	data, err := readAllInto(buf, io.LimitReader(r, maxIndexSize+1))
	if err != nil {
		return nil, &FormatError{File: file, Reason: "reading the index: " + err.Error(), Err: err}
	}
	if len(data) > maxIndexSize {
		return nil, &FormatError{File: file, Offset: maxIndexSize, Reason: fmt.Sprintf("index is larger than %d bytes", maxIndexSize)}
	}
	return parseIndex(data, file, listsOnly)
}

// parseIndex parses a whole index held in data.
func parseIndex(data []byte, file string, listsOnly bool) (*Index, error) {
	splitFrom := 0
	if listsOnly && len(data) >= splitIndexMin {
		splitFrom = len(data) / 2
	}
	return parseIndexSplit(data, file, listsOnly, splitFrom)
}

// parseIndexSplit is parseIndex reading a lists-only weight map in two
// halves, the second from the first entry found after splitFrom (> 0).
func parseIndexSplit(data []byte, file string, listsOnly bool, splitFrom int) (*Index, error) {
	if !utf8.Valid(data) {
		return nil, &FormatError{File: file, Reason: "index is not valid UTF-8"}
	}
	p := &indexParser{jsonScanner: newScanner(data, file, 0, "index"), listsOnly: listsOnly, splitFrom: splitFrom}
	return p.parse()
}

// mapIndexMin is the index size from which Load maps the index instead of
// reading it: a deep checkpoint's index is megabytes, and mapped pages come
// straight from the page cache, with no copy and no fresh memory to clear.
const mapIndexMin = 1 << 20

// loadIndexLists is Load's lists-only read of the index, mapped when it is
// a large regular file. The names in the lists then point into the mapping:
// they must not be used after release, and reading them may fault if the
// file shrinks meanwhile (the caller turns faults into panics it recovers).
// Shard names are always copies.
func loadIndexLists(fsys fs.FS) (ix *Index, release func(), err error) {
	release = func() {}
	if err := checkRegular(fsys, IndexFile); err != nil {
		return nil, release, err
	}
	f, err := fsys.Open(IndexFile)
	if err != nil {
		return nil, release, fmt.Errorf("opening %s: %w", IndexFile, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, release, err
	}
	if osf, ok := f.(*os.File); ok && fi.Mode().IsRegular() && fi.Size() >= mapIndexMin && fi.Size() <= maxIndexSize {
		if data, unmap, err := mapRange(osf, 0, fi.Size()); err == nil {
			ix, err := parseIndex(data, IndexFile, true)
			if err != nil {
				unmap()
				return nil, release, err
			}
			return ix, unmap, nil
		}
	}
	ix, err = readIndex(f, IndexFile, fi.Size(), true)
	return ix, release, err
}

// LoadIndex reads IndexFile from a model folder (fsys = os.DirFS(dir)). A
// directory, FIFO or device of that name is refused before it is opened.
func LoadIndex(fsys fs.FS) (*Index, error) {
	return loadIndex(fsys, false)
}

func loadIndex(fsys fs.FS, listsOnly bool) (*Index, error) {
	if err := checkRegular(fsys, IndexFile); err != nil {
		return nil, err
	}
	f, err := fsys.Open(IndexFile)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", IndexFile, err)
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	return readIndex(f, IndexFile, size, listsOnly)
}

// readAllInto is io.ReadAll appending to buf, which it grows only when the
// reader holds more than buf's capacity.
func readAllInto(buf []byte, r io.Reader) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// indexParser reads model.safetensors.index.json.
type indexParser struct {
	*jsonScanner
	listsOnly bool
	splitFrom int // > 0: read the weight map's entries from about here on in parallel
}

func (p *indexParser) parse() (*Index, error) {
	if !p.consume('{') {
		at := p.pos
		desc, err := p.describe()
		if err != nil {
			return nil, err
		}
		return nil, p.errAt(at, nil, "index: got %s, want \"{\"", desc)
	}
	ix := &Index{}
	haveMap := false
	seen := map[string]bool{}
	for more := p.first('}'); more; {
		k, err := p.key()
		if err != nil {
			return nil, err
		}
		if seen[k] {
			return nil, p.errAt(p.pos, ErrDuplicateKey, "key %q appears twice in the index", k)
		}
		seen[k] = true
		switch k {
		case "weight_map":
			haveMap = true
			if ix.WeightMap, ix.perShard, ix.increasing, err = p.weightMap(); err != nil {
				return nil, err
			}
		case "metadata":
			at := p.pos
			raw, err := p.skip(0)
			if err != nil {
				return nil, err
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&ix.Metadata); err != nil {
				return nil, p.errAt(at, nil, "metadata: %v", err)
			}
		default:
			if _, err := p.skip(0); err != nil {
				return nil, err
			}
		}
		if more, err = p.more('}'); err != nil {
			return nil, err
		}
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	if !haveMap {
		return nil, p.errAt(p.pos, nil, "no weight_map")
	}
	if len(ix.WeightMap) == 0 && len(ix.perShard) == 0 {
		return nil, p.errAt(p.pos, nil, "weight_map is empty")
	}
	return ix, nil
}

// weightMap reads the weight map, counts its tensors per shard, and tells
// whether its names come in strictly increasing order. A large lists-only
// map is read in two halves at once: see splitRead.
func (p *indexParser) weightMap() (wm map[string]string, shards map[string]*shardCount, increasing bool, err error) {
	if !p.consume('{') {
		at := p.pos
		desc, err := p.describe()
		if err != nil {
			return nil, nil, false, err
		}
		return nil, nil, false, p.errAt(at, nil, "weight_map: got %s, want \"{\"", desc)
	}
	st := newEntries(p.listsOnly)
	if !p.listsOnly {
		st.wm = make(map[string]string, bytes.Count(p.buf, []byte{':'})) // one ':' per entry, plus a few
	}
	var split *splitRead
	if p.listsOnly && p.splitFrom > 0 {
		split = p.startSplit(p.splitFrom)
		defer split.wait() // it reads p.buf, which may be unmapped after
	}
	for more := p.first('}'); more; {
		if split != nil && p.ws() == '"' && p.pos == split.at {
			if o := split.wait(); o != nil {
				st.append(o.st)
				p.pos = o.end
				break
			}
			split = nil
		}
		if err := p.entry(st); err != nil {
			return nil, nil, false, err
		}
		if more, err = p.more('}'); err != nil {
			return nil, nil, false, err
		}
	}
	return st.wm, st.shards, st.increasing, nil
}

// entries is what reading weight_map entries builds.
type entries struct {
	wm          map[string]string // nil for lists only
	shards      map[string]*shardCount
	last        *shardCount
	listsOnly   bool
	increasing  bool
	first, prev string // the first and the last name read
	k           int    // entries read
}

func newEntries(listsOnly bool) *entries {
	return &entries{shards: map[string]*shardCount{}, listsOnly: listsOnly, increasing: true}
}

// entry reads one "name": "shard" entry.
func (p *indexParser) entry(st *entries) error {
	name, err := p.key()
	if err != nil {
		return err
	}
	if name == "" || name == metadataKey {
		return p.errAt(p.pos, nil, "weight_map: %q is not a tensor name", name)
	}
	if st.k == 0 {
		st.first = name
	}
	st.increasing = st.increasing && st.prev < name
	st.prev = name
	at := p.pos
	if p.ws() != '"' {
		desc, err := p.describe()
		if err != nil {
			return err
		}
		return p.errAt(at, nil, "weight_map[%q]: got %s, want a shard file name", name, desc)
	}
	shard, err := p.str()
	if err != nil {
		return err
	}
	// A checkpoint has a handful of shards named once per tensor: each
	// distinct name is checked once, counted, and shared by every entry.
	// Entries of one shard mostly come in runs: compare with the last one
	// before looking the name up.
	c := st.last
	if c == nil || c.name != shard {
		c = st.shards[shard]
	}
	if c == nil {
		if err := checkShardPath(shard); err != nil {
			return p.errAt(at, err, "weight_map[%q]: shard %q: %v", name, shard, err)
		}
		c = &shardCount{name: strings.Clone(shard)} // data may be a mapping
		st.shards[c.name] = c
	}
	st.last = c
	c.n++
	c.names = append(c.names, name)
	if st.listsOnly {
		c.at = append(c.at, int32(st.k)) // an index of at most 64 MiB has fewer entries
	}
	st.k++
	// One map operation per entry: a repeated name leaves the size as it was.
	if st.wm != nil {
		size := len(st.wm)
		if st.wm[name] = c.name; len(st.wm) == size {
			return p.errAt(at, ErrDuplicateKey, "weight_map: tensor %q appears twice", name)
		}
	}
	return nil
}

// append adds the entries o read after st's.
func (st *entries) append(o *entries) {
	st.increasing = st.increasing && o.increasing && (st.k == 0 || o.k == 0 || st.prev < o.first)
	for name, c := range o.shards {
		for i := range c.at {
			c.at[i] += int32(st.k)
		}
		mine := st.shards[name]
		if mine == nil {
			st.shards[name] = c
			continue
		}
		mine.n += c.n
		mine.names = append(mine.names, c.names...)
		mine.at = append(mine.at, c.at...)
	}
	if o.k > 0 {
		if st.k == 0 {
			st.first = o.first
		}
		st.prev = o.prev
	}
	st.k += o.k
	st.last = nil
}

// splitRead reads the second half of a large weight map while the caller
// reads the first: it starts at what looks like an entry (a quote, comma
// and quote, white space aside), and its result is used only if the
// caller's own reading arrives at exactly that point at the start of an
// entry, so a guess that fell inside a string is never used. Any error in
// the second half leaves it to the caller, who reads on and reports it.
type splitRead struct {
	at   int
	done chan struct{}
	res  *splitResult
}

type splitResult struct {
	st  *entries
	end int // just after the weight map's closing brace
}

// splitIndexMin is the weight map size from which Load reads it in halves.
const splitIndexMin = 1 << 20

func (p *indexParser) startSplit(from int) *splitRead {
	at := entryStart(p.buf, from)
	if at < 0 {
		return nil
	}
	r := &splitRead{at: at, done: make(chan struct{})}
	q := &indexParser{jsonScanner: newScanner(p.buf, p.file, p.base, p.what), listsOnly: true}
	q.pos = at
	go func() {
		defer close(r.done)
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if rec := recover(); rec != nil {
				if _, fault := rec.(interface{ Addr() uintptr }); !fault {
					panic(rec)
				}
				r.res = nil
			}
		}()
		st := newEntries(true)
		for {
			if q.entry(st) != nil {
				return
			}
			more, err := q.more('}')
			if err != nil {
				return
			}
			if !more {
				break
			}
		}
		r.res = &splitResult{st: st, end: q.pos}
	}()
	return r
}

// wait returns the second half's result, or nil.
func (r *splitRead) wait() *splitResult {
	if r == nil {
		return nil
	}
	<-r.done
	return r.res
}

// entryStart finds, from b[from:], a quote, a comma, white space and a
// quote, and returns the last quote's offset (-1 if none).
func entryStart(b []byte, from int) int {
	for i := from; i < len(b); {
		j := bytes.IndexByte(b[i:], ',')
		if j < 0 {
			return -1
		}
		i += j
		if i > 0 && b[i-1] == '"' {
			k := i + 1
			for k < len(b) && (b[k] == ' ' || b[k] == '\n' || b[k] == '\t' || b[k] == '\r') {
				k++
			}
			if k < len(b) && b[k] == '"' {
				return k
			}
		}
		i++
	}
	return -1
}

// checkShardPath accepts only plain relative slash paths inside the model
// folder that name a .safetensors file.
func checkShardPath(s string) error {
	switch {
	case strings.Contains(s, `\`):
		return fmt.Errorf("backslash in path: %w", ErrUnsafePath)
	case strings.HasPrefix(s, "/"):
		return fmt.Errorf("absolute path: %w", ErrUnsafePath)
	case !fs.ValidPath(s) || s == ".":
		return fmt.Errorf("not a plain relative path (no '..', '.', or empty elements): %w", ErrUnsafePath)
	case !strings.HasSuffix(s, ".safetensors"):
		return fmt.Errorf("not a .safetensors file: %w", ErrUnsafePath)
	}
	return nil
}
