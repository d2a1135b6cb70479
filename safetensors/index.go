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
	if !utf8.Valid(data) {
		return nil, &FormatError{File: file, Reason: "index is not valid UTF-8"}
	}
	p := &indexParser{jsonScanner: newScanner(data, file, 0, "index"), listsOnly: listsOnly}
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
// whether its names come in strictly increasing order.
func (p *indexParser) weightMap() (wm map[string]string, shards map[string]*shardCount, increasing bool, err error) {
	if !p.consume('{') {
		at := p.pos
		desc, err := p.describe()
		if err != nil {
			return nil, nil, false, err
		}
		return nil, nil, false, p.errAt(at, nil, "weight_map: got %s, want \"{\"", desc)
	}
	if !p.listsOnly {
		wm = make(map[string]string, bytes.Count(p.buf, []byte{':'})) // one ':' per entry, plus a few
	}
	// A checkpoint has a handful of shards named once per tensor: each
	// distinct name is checked once, counted, and shared by every entry.
	shards = map[string]*shardCount{}
	var last *shardCount
	increasing = true
	prev := ""
	for k, more := 0, p.first('}'); more; k++ {
		name, err := p.key()
		if err != nil {
			return nil, nil, false, err
		}
		if name == "" || name == metadataKey {
			return nil, nil, false, p.errAt(p.pos, nil, "weight_map: %q is not a tensor name", name)
		}
		increasing = increasing && prev < name
		prev = name
		at := p.pos
		if p.ws() != '"' {
			desc, err := p.describe()
			if err != nil {
				return nil, nil, false, err
			}
			return nil, nil, false, p.errAt(at, nil, "weight_map[%q]: got %s, want a shard file name", name, desc)
		}
		shard, err := p.str()
		if err != nil {
			return nil, nil, false, err
		}
		// Entries of one shard mostly come in runs: compare with the last
		// one before looking the name up.
		c := last
		if c == nil || c.name != shard {
			c = shards[shard]
		}
		if c == nil {
			if err := checkShardPath(shard); err != nil {
				return nil, nil, false, p.errAt(at, err, "weight_map[%q]: shard %q: %v", name, shard, err)
			}
			c = &shardCount{name: strings.Clone(shard)} // data may be a mapping
			shards[c.name] = c
		}
		last = c
		c.n++
		c.names = append(c.names, name)
		if p.listsOnly {
			c.at = append(c.at, int32(k)) // an index of at most 64 MiB has fewer entries
		}
		shard = c.name
		// One map operation per entry: a repeated name leaves the size as it was.
		if wm != nil {
			size := len(wm)
			if wm[name] = shard; len(wm) == size {
				return nil, nil, false, p.errAt(at, ErrDuplicateKey, "weight_map: tensor %q appears twice", name)
			}
		}
		if more, err = p.more('}'); err != nil {
			return nil, nil, false, err
		}
	}
	return wm, shards, increasing, nil
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
