package safetensors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"maps"
	"path"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"phase0/internal/gcpause"
	"phase0/internal/parallel"
	"phase0/internal/stformat"
)

// gcBudget bounds how far the heap may grow while Load holds the collector
// off: an inventory of 73,731 tensors takes about 30 MB.
const gcBudget = 512 << 20

// SingleFile is the name of an unsharded checkpoint.
const SingleFile = stformat.SingleFile

// Inventory is every tensor of a model folder, read from headers only.
type Inventory struct {
	Sharded    bool              // true when an index file drove the inventory
	Files      []string          // relative paths, sorted
	Metadata   map[string]string // merged __metadata__ of all files (first file wins on conflict)
	TotalBytes int64             // sum of tensor data sizes

	// The tensors are one slice, file by file and in data order within a
	// file, found by name either through a map of positions or, when the
	// index lists the names in increasing order (the hub's writers sort
	// them), by binary search over the positions in name order, which the
	// index gives for free: a deep checkpoint has tens of thousands of
	// tensors, and a map of 88-byte Tensor values cost more to build and to
	// walk than everything else the inventory does.
	tensors []Tensor
	byName  map[string]int // nil when byOrder is set
	byOrder []int32        // positions in tensors, in name order
}

// Len is the number of tensors.
func (inv *Inventory) Len() int { return len(inv.tensors) }

// Tensor returns the tensor of that name.
func (inv *Inventory) Tensor(name string) (Tensor, bool) {
	if i, ok := inv.find(name); ok {
		return inv.tensors[i], true
	}
	return Tensor{}, false
}

// Has reports whether a tensor of that name is present.
func (inv *Inventory) Has(name string) bool {
	_, ok := inv.find(name)
	return ok
}

func (inv *Inventory) find(name string) (int, bool) {
	if inv.byOrder == nil {
		i, ok := inv.byName[name]
		return i, ok
	}
	k, ok := slices.BinarySearchFunc(inv.byOrder, name, func(i int32, name string) int {
		return strings.Compare(inv.tensors[i].Name, name)
	})
	if !ok {
		return 0, false
	}
	return int(inv.byOrder[k]), true
}

// Tensors returns every tensor, file by file (in Files order) and by offset
// within a file. The slice is the inventory's own: read it, do not modify it.
func (inv *Inventory) Tensors() []Tensor { return inv.tensors }

// AllNames yields every tensor name in Tensors order (not sorted).
func (inv *Inventory) AllNames() iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := range inv.tensors {
			if !yield(inv.tensors[i].Name) {
				return
			}
		}
	}
}

// Names returns the tensor names, sorted.
func (inv *Inventory) Names() []string {
	names := make([]string, len(inv.tensors))
	if inv.byOrder != nil {
		for k, i := range inv.byOrder {
			names[k] = inv.tensors[i].Name
		}
		return names
	}
	for i := range inv.tensors {
		names[i] = inv.tensors[i].Name
	}
	slices.Sort(names)
	return names
}

// Load builds the inventory of a model folder (fsys = os.DirFS(modelDir)).
//
// With model.safetensors.index.json the index is the truth: every shard it
// names must exist and hold exactly the tensors it assigns there. Without
// one, model.safetensors is used, or else every top-level *.safetensors file.
// Pickle checkpoints are never opened. Shards are read concurrently, so
// fsys must allow that (os.DirFS does).
func Load(fsys fs.FS) (*Inventory, error) {
	// Nearly everything Load allocates is the inventory it returns, so a
	// collection in the middle would only mark it.
	defer gcpause.Hold(gcBudget)()
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
	return &Inventory{byName: map[string]int{}, Metadata: map[string]string{}}
}

// insert adds a header's tensors with one map operation each, and returns
// the first name that was already there ("" when none was).
func (inv *Inventory) insert(h *Header) string {
	if len(inv.tensors) == 0 {
		inv.tensors = h.Tensors // the usual single file: no copy
	} else {
		inv.tensors = append(inv.tensors, h.Tensors...)
	}
	return inv.index(len(inv.tensors)-len(h.Tensors), len(inv.tensors))
}

// index maps the names of tensors[from:to] to their positions and adds up
// their sizes; it returns the first name that was already there.
func (inv *Inventory) index(from, to int) string {
	for i := from; i < to; i++ {
		t := &inv.tensors[i]
		size := len(inv.byName)
		if inv.byName[t.Name] = i; len(inv.byName) == size {
			return t.Name
		}
		inv.TotalBytes += t.End - t.Begin
	}
	return ""
}

// repeated explains a tensor name insert found twice: repeated in the
// header of file (ReadHeader's error, reading it again with the check on), or
// also in an earlier file (found by reading their headers again). Only a
// failing Load gets here.
func repeated(fsys fs.FS, name, file string, earlier []string) error {
	if _, err := readHeaderFS(fsys, file, headerOpts{dupKeys: true}); err != nil {
		return err
	}
	for _, prev := range earlier {
		h, err := readHeaderFS(fsys, prev, headerOpts{})
		if err != nil {
			return err
		}
		if slices.ContainsFunc(h.Tensors, func(t Tensor) bool { return t.Name == name }) {
			return fmt.Errorf("tensor %q is in both %s and %s: %w", name, prev, file, ErrDuplicateTensor)
		}
	}
	return fmt.Errorf("tensor %q is in %s and an earlier file: %w", name, file, ErrDuplicateTensor)
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
		h, err := readHeaderFS(fsys, f, headerOpts{})
		if err != nil {
			return nil, err
		}
		if name := inv.insert(h); name != "" {
			return nil, repeated(fsys, name, f, inv.Files)
		}
		inv.Files = append(inv.Files, f)
		inv.addMetadata(h.Metadata)
	}
	return inv, nil
}

// loadSharded first tries the way that works for a sound checkpoint written
// as the hub writes them: the index read into per-shard lists only, each
// header listing exactly its shard's list in the same order, no name twice.
// Anything else (an error, another order, a repeat) is settled by
// loadShardedChecked, which reads everything again and explains it.
func loadSharded(fsys fs.FS) (*Inventory, error) {
	if inv := loadShardedInOrder(fsys); inv != nil {
		return inv, nil
	}
	return loadShardedChecked(fsys)
}

// loadShardedInOrder is the fast way, or nil. Each shard's header is
// parsed straight into its part of the inventory's one slice, the index
// sizing the parts. When the index's names are increasing they are
// distinct, so no map is needed: the headers' names, equal to the index's
// lists, are distinct too, and the index's order is the name order.
// Otherwise the caller's goroutine maps the names of the shards already
// parsed while later ones are still being parsed, in shard order.
func loadShardedInOrder(fsys fs.FS) (result *Inventory) {
	// The index may be mapped: a file shrinking under the mapping faults,
	// which here means only "take the careful way", which reads it again.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			result = nil
		}
	}()
	ix, release, err := loadIndexLists(fsys)
	defer release()
	if err != nil {
		return nil
	}
	shards := slices.Sorted(maps.Keys(ix.perShard))
	starts := make([]int, len(shards)+1)
	for i, s := range shards {
		starts[i+1] = starts[i] + ix.perShard[s].n
	}
	// inv, not the result: a failure returns nil while the workers finish.
	inv := &Inventory{Sharded: true, Files: shards, Metadata: map[string]string{}}
	inv.tensors = make([]Tensor, starts[len(shards)])
	if ix.increasing {
		inv.byOrder = make([]int32, len(inv.tensors))
	}
	l := &shardLoad{fsys: fsys, ix: ix, shards: shards, starts: starts, inv: inv,
		headers: make([]*Header, len(shards)), bytes: make([]int64, len(shards))}
	ready := make([]chan struct{}, len(shards))
	for i := range ready {
		ready[i] = make(chan struct{})
	}
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	defer wg.Wait() // before release, and on a failure too: nothing may still use inv or the index
	for range min(runtime.GOMAXPROCS(0), len(shards)) {
		wg.Go(func() {
			var buf []byte
			for i := int(next.Add(1) - 1); i < len(shards) && !failed.Load(); i = int(next.Add(1) - 1) {
				l.read(i, &buf)
				close(ready[i])
			}
		})
	}
	if inv.byOrder == nil {
		inv.byName = make(map[string]int, len(inv.tensors))
	}
	for i := range l.headers {
		<-ready[i]
		h := l.headers[i]
		if h == nil || (inv.byName != nil && inv.index(starts[i], starts[i+1]) != "") {
			failed.Store(true)
			return nil
		}
		inv.addMetadata(h.Metadata)
	}
	if inv.byOrder != nil { // else index added them up
		for _, b := range l.bytes {
			inv.TotalBytes += b
		}
	}
	return inv
}

// shardLoad is loadShardedInOrder's work: each shard parsed into its part
// of the one slice by whichever worker takes it.
type shardLoad struct {
	fsys    fs.FS
	ix      *Index
	shards  []string
	starts  []int // shard i's part is inv.tensors[starts[i]:starts[i+1]]
	inv     *Inventory
	headers []*Header // nil until shard i parsed and matched the index
	bytes   []int64   // shard i's tensor bytes
}

// read parses shard i into its part and checks it against the index's
// list; false on any difference or fault.
func (l *shardLoad) read(i int, buf *[]byte) (ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			ok = false
		}
	}()
	c := l.ix.perShard[l.shards[i]]
	part := l.inv.tensors[l.starts[i]:l.starts[i]:l.starts[i+1]]
	h, err := readHeaderFS(l.fsys, l.shards[i], headerOpts{dst: part, buf: buf})
	if err != nil || !sameKeys(h, c.names) {
		return false
	}
	for k := range h.Tensors {
		t := h.inKeyOrder(k)
		l.bytes[i] += t.End - t.Begin
		if l.inv.byOrder != nil {
			l.inv.byOrder[c.at[k]] = int32(l.starts[i] + h.keyPos(k))
		}
	}
	l.headers[i] = h
	return true
}

// loadShardedChecked checks the index's every claim, tensor by tensor.
func loadShardedChecked(fsys fs.FS) (*Inventory, error) {
	ix, err := LoadIndex(fsys)
	if err != nil {
		return nil, err
	}
	// Each tensor costs one lookup in the weight map (is it assigned to the
	// shard it is in?) and one insert into the inventory; the per-shard
	// counts, taken while parsing the index, close the check.
	counts := ix.shardCounts()
	shards := ix.Shards()
	// Shards are read and checked against the (read-only) weight map in
	// parallel; the inventory is filled in shard order, so errors and
	// contents do not depend on the schedule.
	type shardRead struct {
		h     *Header
		err   error
		stray string // the first header tensor the index does not assign here
	}
	reads, _ := parallel.Map(context.Background(), shards, runtime.GOMAXPROCS(0), func(_ context.Context, _ int, shard string) shardRead {
		h, err := readHeaderFS(fsys, shard, headerOpts{})
		if err != nil {
			return shardRead{err: err}
		}
		if sameKeys(h, counts[shard].names) {
			return shardRead{h: h} // the usual case: no map lookups at all
		}
		for i := range h.Tensors {
			if ix.WeightMap[h.Tensors[i].Name] != shard {
				return shardRead{h: h, stray: h.Tensors[i].Name}
			}
		}
		return shardRead{h: h}
	})
	inv := newInventory()
	inv.Sharded = true
	inv.byName = make(map[string]int, len(ix.WeightMap))
	for i, shard := range shards {
		h, err := reads[i].h, reads[i].err
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s names shard %s, which does not exist: %w", IndexFile, shard, ErrMissingShard)
		}
		if err != nil {
			return nil, err
		}
		if name := reads[i].stray; name != "" {
			where := "does not list it"
			if other, ok := ix.WeightMap[name]; ok {
				where = "assigns it to " + other
			}
			return nil, fmt.Errorf("tensor %q is in the header of %s but %s %s: %w", name, shard, IndexFile, where, ErrTensorNotInIndex)
		}
		// Every tensor assigned to another shard was refused above, so a
		// name insert finds twice is repeated in this header.
		if name := inv.insert(h); name != "" {
			return nil, repeated(fsys, name, shard, nil)
		}
		// Every header tensor is assigned here and unique, so equal counts
		// mean the index's list for this shard is exactly the header's.
		if len(h.Tensors) != counts[shard].n {
			var missing []string
			for name, s := range ix.WeightMap {
				if s == shard && !inv.Has(name) {
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
		inv.Files = append(inv.Files, shard)
		inv.addMetadata(h.Metadata)
	}
	return inv, nil
}

// sameKeys reports whether the header lists exactly names, in that order.
// Writers list a shard's tensors sorted by name in both the index and the
// header, so this settles the check for most shards with plain string
// compares; any other order falls back to a lookup per tensor.
func sameKeys(h *Header, names []string) bool {
	if len(names) != len(h.Tensors) {
		return false
	}
	for k, name := range names {
		if h.inKeyOrder(k).Name != name {
			return false
		}
	}
	return true
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
func readHeaderFS(fsys fs.FS, name string, opts headerOpts) (*Header, error) {
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
	return readHeader(ra, fi.Size(), name, opts)
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
