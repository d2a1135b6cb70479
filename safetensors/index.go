package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"

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
	seen := map[string]bool{}
	var out []string
	for _, s := range ix.WeightMap {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sortStrings(out)
	return out
}

// ReadIndex parses an index file. Repeated keys, a missing or empty
// weight_map, non-string shard names and unsafe shard paths are errors.
// Unknown top-level keys are skipped.
func ReadIndex(r io.Reader, file string) (*Index, error) {
	lr := &io.LimitedReader{R: r, N: maxIndexSize + 1}
	dec := json.NewDecoder(lr)
	dec.UseNumber()
	p := &indexParser{jsonWalker{dec: dec, file: file, what: "index"}}
	ix, err := p.parse()
	if lr.N <= 0 {
		return nil, &FormatError{File: file, Offset: maxIndexSize, Reason: fmt.Sprintf("index is larger than %d bytes", maxIndexSize)}
	}
	if err != nil {
		return nil, err
	}
	return ix, nil
}

// indexParser walks model.safetensors.index.json.
type indexParser struct{ jsonWalker }

func (p *indexParser) parse() (*Index, error) {
	if err := p.delim('{', "index"); err != nil {
		return nil, err
	}
	ix := &Index{}
	seen := map[string]bool{}
	for p.dec.More() {
		k, err := p.key()
		if err != nil {
			return nil, err
		}
		if seen[k] {
			return nil, p.errf(ErrDuplicateKey, "key %q appears twice in the index", k)
		}
		seen[k] = true
		switch k {
		case "weight_map":
			if ix.WeightMap, err = p.weightMap(); err != nil {
				return nil, err
			}
		case "metadata":
			var md map[string]any
			if err := p.dec.Decode(&md); err != nil {
				return nil, p.errf(nil, "metadata: %v", err)
			}
			ix.Metadata = md
		default:
			var skip json.RawMessage
			if err := p.dec.Decode(&skip); err != nil {
				return nil, p.errf(nil, "%s: %v", k, err)
			}
		}
	}
	if err := p.delim('}', "end of index"); err != nil {
		return nil, err
	}
	if tok, err := p.dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, p.errf(nil, "after the index object: %v", err)
		}
		return nil, p.errf(nil, "unexpected %s after the index object", describe(tok))
	}
	if ix.WeightMap == nil {
		return nil, p.errf(nil, "no weight_map")
	}
	if len(ix.WeightMap) == 0 {
		return nil, p.errf(nil, "weight_map is empty")
	}
	return ix, nil
}

func (p *indexParser) weightMap() (map[string]string, error) {
	if err := p.delim('{', "weight_map"); err != nil {
		return nil, err
	}
	wm := map[string]string{}
	for p.dec.More() {
		name, err := p.key()
		if err != nil {
			return nil, err
		}
		if _, dup := wm[name]; dup {
			return nil, p.errf(ErrDuplicateKey, "weight_map: tensor %q appears twice", name)
		}
		if name == "" || name == metadataKey {
			return nil, p.errf(nil, "weight_map: %q is not a tensor name", name)
		}
		tok, err := p.token()
		if err != nil {
			return nil, err
		}
		shard, ok := tok.(string)
		if !ok {
			return nil, p.errf(nil, "weight_map[%q]: got %s, want a shard file name", name, describe(tok))
		}
		if err := checkShardPath(shard); err != nil {
			return nil, p.errf(err, "weight_map[%q]: shard %q: %v", name, shard, err)
		}
		wm[name] = shard
	}
	return wm, p.delim('}', "weight_map")
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
