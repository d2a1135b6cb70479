package safetensors

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// NonFinite counts the NaN and ±Inf elements of one tensor.
type NonFinite struct {
	Name string
	NaN  int64
	Inf  int64
}

// ScanProgress receives how many of the scanned bytes are done. Scan calls it
// from the caller's goroutine, at most every progressInterval, and once at
// the end with doneBytes == totalBytes.
type ScanProgress func(doneBytes, totalBytes int64)

// Tuning knobs; tests shrink them to exercise chunk splitting.
var (
	scanChunkSize    int64 = 8 << 20 // bytes per unit of work
	progressInterval       = 100 * time.Millisecond
	useMmap                = true
)

// scanItem is one float tensor with its running counts.
type scanItem struct {
	t        Tensor
	src      *scanSource
	nan, inf atomic.Int64
}

// scanChunk is a slice of one tensor's bytes, a whole number of elements.
type scanChunk struct {
	item       *scanItem
	begin, end int64 // absolute offsets in the file
}

// Scan counts NaN and ±Inf in every BF16, F16, F32 and F64 tensor of inv,
// reading the files under dir with the given number of goroutines (< 1 means
// GOMAXPROCS). Files are memory-mapped read-only where possible, read with
// pread otherwise. Only tensors with at least one non-finite element are
// returned, sorted by name. Progress counts bytes of the float tensors only.
func Scan(dir string, inv *Inventory, workers int, progress ScanProgress) ([]NonFinite, error) {
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	var items []*scanItem
	byFile := map[string][]*scanItem{}
	for _, name := range inv.Names() {
		t := inv.Tensors[name]
		if !scannable(t.DType) || t.End <= t.Begin {
			continue
		}
		it := &scanItem{t: t}
		items = append(items, it)
		byFile[t.File] = append(byFile[t.File], it)
	}

	files := slices.Sorted(func(yield func(string) bool) {
		for f := range byFile {
			if !yield(f) {
				return
			}
		}
	})
	var chunks []scanChunk
	var total int64
	for _, file := range files {
		its := byFile[file]
		slices.SortFunc(its, func(a, b *scanItem) int { return cmp.Compare(a.t.Begin, b.t.Begin) })
		src, err := openSource(dir, file, its[len(its)-1].t.End)
		if err != nil {
			return nil, err
		}
		defer src.close()
		for _, it := range its {
			it.src = src
			esize, _ := DTypeSize(it.t.DType)
			step := max(scanChunkSize/esize*esize, esize)
			for b := it.t.Begin; b < it.t.End; b += step {
				chunks = append(chunks, scanChunk{item: it, begin: b, end: min(b+step, it.t.End)})
			}
			total += it.t.Bytes()
		}
	}

	var done atomic.Int64
	var next atomic.Int64
	var failed atomic.Bool
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := scanWorker(chunks, &next, &done, &failed); err != nil {
				errs[w] = err
				failed.Store(true)
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	if progress != nil {
		tick := time.NewTicker(progressInterval)
	wait:
		for {
			select {
			case <-tick.C:
				progress(done.Load(), total)
			case <-finished:
				break wait
			}
		}
		tick.Stop()
	} else {
		<-finished
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if progress != nil {
		progress(total, total)
	}

	var out []NonFinite
	for _, it := range items {
		if n, i := it.nan.Load(), it.inf.Load(); n+i > 0 {
			out = append(out, NonFinite{Name: it.t.Name, NaN: n, Inf: i})
		}
	}
	return out, nil
}

// scanWorker takes chunks in file order until none are left or another
// worker failed. A file shrinking under a mapping raises SIGBUS; with
// SetPanicOnFault that becomes a recoverable panic reported as ErrTruncated.
func scanWorker(chunks []scanChunk, next, done *atomic.Int64, failed *atomic.Bool) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var cur *scanChunk
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault || cur == nil {
				panic(r)
			}
			err = fmt.Errorf("%s: memory fault reading tensor %q (file changed during the scan?): %w", cur.item.t.File, cur.item.t.Name, ErrTruncated)
		}
	}()
	var buf []byte
	for !failed.Load() {
		k := next.Add(1) - 1
		if k >= int64(len(chunks)) {
			return nil
		}
		cur = &chunks[k]
		data, err := cur.item.src.bytes(cur.begin, cur.end, &buf)
		if err != nil {
			return fmt.Errorf("%s: tensor %q: %w", cur.item.t.File, cur.item.t.Name, err)
		}
		nan, inf, _ := countNonFinite(cur.item.t.DType, data)
		if nan != 0 {
			cur.item.nan.Add(nan)
		}
		if inf != 0 {
			cur.item.inf.Add(inf)
		}
		done.Add(cur.end - cur.begin)
	}
	return nil
}

// scanSource is one open file, mapped when possible.
type scanSource struct {
	name string
	f    *os.File
	data []byte // the whole file when mapped
}

func openSource(dir, file string, need int64) (*scanSource, error) {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(file)))
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.Size() < need {
		f.Close()
		return nil, fmt.Errorf("%s is %d bytes but its tensors end at %d: %w", file, fi.Size(), need, ErrTruncated)
	}
	s := &scanSource{name: file, f: f}
	if useMmap {
		s.data, _ = mapFile(f, fi.Size()) // on failure fall back to pread
	}
	return s, nil
}

// bytes returns the file's bytes [begin, end), from the mapping or read into *buf.
func (s *scanSource) bytes(begin, end int64, buf *[]byte) ([]byte, error) {
	if s.data != nil {
		return s.data[begin:end], nil
	}
	n := int(end - begin)
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	k, err := s.f.ReadAt(b, begin)
	if k == n {
		return b, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = ErrTruncated
	}
	return nil, fmt.Errorf("reading %d bytes at %d: %w", n, begin, err)
}

func (s *scanSource) close() {
	if s.data != nil {
		unmapFile(s.data)
		s.data = nil
	}
	s.f.Close()
}
