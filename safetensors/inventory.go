package safetensors

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"phase0/internal/stformat"
)

// SingleFile is the name of an unsharded checkpoint.
const SingleFile = stformat.SingleFile

// Inventory is every tensor of a model folder, read from headers only.
type Inventory struct {
	Sharded    bool              // true when an index file drove the inventory
	Files      []string          // relative paths, sorted
	Tensors    map[string]Tensor // by name
	Metadata   map[string]string // merged __metadata__ of all files (first file wins on conflict)
	TotalBytes int64             // sum of tensor data sizes
}

// Names returns the tensor names, sorted.
func (inv *Inventory) Names() []string {
	names := make([]string, 0, len(inv.Tensors))
	for n := range inv.Tensors {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Load builds the inventory of a model folder (fsys = os.DirFS(modelDir)).
//
// With model.safetensors.index.json the index is the truth: every shard it
// names must exist and hold exactly the tensors it assigns there. Without
// one, model.safetensors is used, or else every top-level *.safetensors file.
// Pickle checkpoints are never opened.
func Load(fsys fs.FS) (*Inventory, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("listing the model folder: %w", err)
	}
	var hasIndex, hasSingle bool
	var stFiles, pickles []string
	for _, e := range entries {
		name := e.Name()
		if name == IndexFile || name == SingleFile {
			// A directory or pipe under a name that decides the layout is
			// refused, not skipped: skipping would load a different layout.
			if err := checkRegular(fsys, name); err != nil {
				return nil, err
			}
		} else if e.IsDir() {
			continue
		}
		switch {
		case name == IndexFile:
			hasIndex = true
		case name == SingleFile:
			hasSingle = true
			stFiles = append(stFiles, name)
		case strings.HasSuffix(name, ".safetensors"):
			stFiles = append(stFiles, name)
		case isPickleName(name):
			pickles = append(pickles, name)
		}
	}
	switch {
	case hasIndex && hasSingle:
		return nil, fmt.Errorf("%s and %s are both present; remove one so the layout is unambiguous: %w", SingleFile, IndexFile, ErrMixedLayout)
	case hasIndex:
		return loadSharded(fsys)
	case hasSingle:
		return loadFiles(fsys, []string{SingleFile})
	case len(stFiles) > 0:
		return loadFiles(fsys, stFiles)
	case len(pickles) > 0:
		return nil, fmt.Errorf("found %s; convert the checkpoint to safetensors: %w", strings.Join(pickles, ", "), ErrPickleOnly)
	}
	return nil, fmt.Errorf("no *.safetensors, index or pickle files in the model folder: %w", ErrNoWeights)
}

func isPickleName(name string) bool {
	switch path.Ext(name) {
	case ".bin", ".pt", ".pth":
		return true
	}
	return name == "pytorch_model.bin.index.json"
}

func newInventory() *Inventory {
	return &Inventory{Tensors: map[string]Tensor{}, Metadata: map[string]string{}}
}

// add records a file's header, rejecting tensor names already seen.
func (inv *Inventory) add(file string, h *Header) error {
	inv.Files = append(inv.Files, file)
	for _, t := range h.Tensors {
		if prev, dup := inv.Tensors[t.Name]; dup {
			return fmt.Errorf("tensor %q is in both %s and %s: %w", t.Name, prev.File, file, ErrDuplicateTensor)
		}
		inv.Tensors[t.Name] = t
		inv.TotalBytes += t.Bytes()
	}
	inv.addMetadata(h.Metadata)
	return nil
}

// addMetadata merges a header's __metadata__; the first file wins.
func (inv *Inventory) addMetadata(md map[string]string) {
	for k, v := range md {
		if _, ok := inv.Metadata[k]; !ok {
			inv.Metadata[k] = v
		}
	}
}

func loadFiles(fsys fs.FS, files []string) (*Inventory, error) {
	slices.Sort(files)
	inv := newInventory()
	for _, f := range files {
		h, err := readHeaderFS(fsys, f)
		if err != nil {
			return nil, err
		}
		if err := inv.add(f, h); err != nil {
			return nil, err
		}
	}
	return inv, nil
}

func loadSharded(fsys fs.FS) (*Inventory, error) {
	ix, err := LoadIndex(fsys)
	if err != nil {
		return nil, err
	}
	// One pass over the weight map groups its tensors by shard, so each
	// shard's check below costs its own tensors, not the whole map.
	byShard := map[string][]string{}
	for name, shard := range ix.WeightMap {
		byShard[shard] = append(byShard[shard], name)
	}
	inv := newInventory()
	inv.Sharded = true
	inv.Tensors = make(map[string]Tensor, len(ix.WeightMap))
	for _, shard := range ix.Shards() {
		h, err := readHeaderFS(fsys, shard)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s names shard %s, which does not exist: %w", IndexFile, shard, ErrMissingShard)
		}
		if err != nil {
			return nil, err
		}
		for _, t := range h.Tensors {
			if ix.WeightMap[t.Name] != shard {
				where := "does not list it"
				if other, ok := ix.WeightMap[t.Name]; ok {
					where = "assigns it to " + other
				}
				return nil, fmt.Errorf("tensor %q is in the header of %s but %s %s: %w", t.Name, shard, IndexFile, where, ErrTensorNotInIndex)
			}
		}
		// Every header tensor is assigned here and names are unique within
		// a header, so equal counts mean the index's list for this shard is
		// exactly the header's.
		if want := byShard[shard]; len(h.Tensors) != len(want) {
			inHeader := make(map[string]bool, len(h.Tensors))
			for _, t := range h.Tensors {
				inHeader[t.Name] = true
			}
			var missing []string
			for _, name := range want {
				if !inHeader[name] {
					missing = append(missing, name)
				}
			}
			slices.Sort(missing)
			more := ""
			if len(missing) > 1 {
				more = fmt.Sprintf(" (and %d more)", len(missing)-1)
			}
			return nil, fmt.Errorf("tensor %q%s assigned to %s by %s is not in that shard's header: %w", missing[0], more, shard, IndexFile, ErrTensorNotInShard)
		}
		// The checks above place each tensor in exactly one shard, so no
		// name can repeat across shards: insert without looking first.
		inv.Files = append(inv.Files, shard)
		for _, t := range h.Tensors {
			inv.Tensors[t.Name] = t
			inv.TotalBytes += t.Bytes()
		}
		inv.addMetadata(h.Metadata)
	}
	return inv, nil
}

// checkRegular refuses a name in fsys that is not a regular file (links
// followed) before anything opens it: opening a FIFO blocks until a writer
// appears, and a device never ends.
func checkRegular(fsys fs.FS, name string) error {
	fi, err := fs.Stat(fsys, name)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if fi.Mode().IsRegular() {
		return nil
	}
	kind := "not a regular file"
	switch m := fi.Mode(); {
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case m&fs.ModeDevice != 0:
		kind = "a device"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	}
	return fmt.Errorf("%s is %s, want a regular file; remove or replace it: %w", name, kind, ErrNotRegular)
}

// readHeaderFS opens name in fsys and reads its header. Files that are not
// io.ReaderAt are read sequentially, never further than the header.
func readHeaderFS(fsys fs.FS, name string) (*Header, error) {
	if err := checkRegular(fsys, name); err != nil {
		return nil, err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() { // replaced since checkRegular looked
		return nil, fmt.Errorf("%s is not a regular file: %w", name, ErrNotRegular)
	}
	ra, ok := f.(io.ReaderAt)
	if !ok {
		ra = &seqReaderAt{r: f}
	}
	return ReadHeader(ra, fi.Size(), name)
}

// seqReaderAt serves ReadAt from a plain reader by buffering everything read
// so far. ReadHeader only asks for the bytes it has already bounds-checked,
// so the buffer never exceeds 8+MaxHeaderSize.
type seqReaderAt struct {
	r   io.Reader
	buf []byte
}

func (s *seqReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	need := off + int64(len(p))
	if need > int64(len(s.buf)) {
		more := make([]byte, need-int64(len(s.buf)))
		n, err := io.ReadFull(s.r, more)
		s.buf = append(s.buf, more[:n]...)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return 0, err
		}
	}
	if off >= int64(len(s.buf)) {
		return 0, io.EOF
	}
	n := copy(p, s.buf[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
