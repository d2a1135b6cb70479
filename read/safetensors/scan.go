package safetensors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
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

// scanBudget bounds the file bytes mapped (or buffered) at once across all
// workers, so peak RSS does not grow with the model: each worker maps only
// the chunk it is scanning and unmaps it before taking the next.
const scanBudget = 128 << 20

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
// GOMAXPROCS). Each worker maps one chunk of a file at a time (pread where
// mapping is unavailable), so memory stays bounded whatever the model size.
// Only tensors with at least one non-finite element are returned, sorted by
// name. Progress counts bytes of the float tensors only. When ctx is
// cancelled the workers stop after their current chunk and Scan returns an
// error wrapping ctx.Err().
func Scan(ctx context.Context, dir string, inv *Inventory, workers int, progress ScanProgress) ([]NonFinite, error) {
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	chunkSize := min(scanChunkSize, max(scanBudget/int64(workers), 1<<20))
	items, chunks, total, closeSources, err := planScan(dir, inv, chunkSize)
	defer closeSources()
	if err != nil {
		return nil, err
	}
	if err := runScan(ctx, chunks, workers, total, progress); err != nil {
		return nil, err
	}

	var out []NonFinite
	for _, it := range items {
		if n, i := it.nan.Load(), it.inf.Load(); n+i > 0 {
			out = append(out, NonFinite{Name: it.t.Name, NaN: n, Inf: i})
		}
	}
	slices.SortFunc(out, func(a, b NonFinite) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// planScan lists the float tensors to scan (items), cut into chunks of at
// most chunkSize bytes in file order, and opens each file once; the caller
// closes them with the returned function, also after an error.
func planScan(dir string, inv *Inventory, chunkSize int64) (items []*scanItem, chunks []scanChunk, total int64, closeAll func(), err error) {
	var sources []*scanSource
	closeAll = func() {
		for _, src := range sources {
			src.close()
		}
	}
	byFile := map[string][]*scanItem{}
	for _, t := range inv.Tensors() {
		if !scannable(t.DType) || t.End <= t.Begin {
			continue
		}
		it := &scanItem{t: t}
		items = append(items, it)
		byFile[t.File] = append(byFile[t.File], it)
	}

	files := slices.Sorted(maps.Keys(byFile))
	for _, file := range files {
		its := byFile[file]
		slices.SortFunc(its, func(a, b *scanItem) int { return cmp.Compare(a.t.Begin, b.t.Begin) })
		src, err := openSource(dir, file, its[len(its)-1].t.End)
		if err != nil {
			return nil, nil, 0, closeAll, err
		}
		sources = append(sources, src)
		for _, it := range its {
			it.src = src
			esize, _ := DTypeSize(it.t.DType)
			step := max(chunkSize/esize*esize, esize)
			for b := it.t.Begin; b < it.t.End; b += step {
				chunks = append(chunks, scanChunk{item: it, begin: b, end: min(b+step, it.t.End)})
			}
			total += it.t.Bytes()
		}
	}

	return items, chunks, total, closeAll, nil
}

// runScan scans the chunks on workers goroutines, reporting progress.
func runScan(ctx context.Context, chunks []scanChunk, workers int, total int64, progress ScanProgress) error {
	var done atomic.Int64
	var next atomic.Int64
	var failed atomic.Bool
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := scanWorker(ctx, chunks, &next, &done, &failed); err != nil {
				errs[w] = err
				failed.Store(true)
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	var tick <-chan time.Time
	if progress != nil {
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		tick = t.C
	}
wait:
	for {
		select {
		case <-tick:
			progress(done.Load(), total)
		case <-finished:
			break wait
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("scan stopped after %d of %d bytes: %w", done.Load(), total, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if progress != nil {
		progress(total, total)
	}

	return nil
}

// scanWorker takes chunks in file order until none are left, another
// worker failed or ctx is done. Read-ahead comes from FADV_SEQUENTIAL on the
// file and MAP_POPULATE's synchronous fault-in: a per-chunk FADV_WILLNEED
// was measured to cost a quarter of the warm-cache throughput.
// A file shrinking under a mapping raises SIGBUS; with SetPanicOnFault that
// becomes a recoverable panic reported as ErrTruncated.
func scanWorker(ctx context.Context, chunks []scanChunk, next, done *atomic.Int64, failed *atomic.Bool) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var cur *scanChunk
	var release func()
	defer func() {
		if release != nil {
			release()
		}
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault || cur == nil {
				panic(r)
			}
			err = fmt.Errorf("%s: memory fault reading tensor %q (file changed during the scan?): %w", cur.item.t.File, cur.item.t.Name, ErrTruncated)
		}
	}()
	var buf []byte
	for !failed.Load() && ctx.Err() == nil {
		k := next.Add(1) - 1
		if k >= int64(len(chunks)) {
			return nil
		}
		cur = &chunks[k]
		var data []byte
		data, release, err = cur.item.src.bytes(cur.begin, cur.end, &buf)
		if err != nil {
			return fmt.Errorf("%s: tensor %q: %w", cur.item.t.File, cur.item.t.Name, err)
		}
		nan, inf, _ := countNonFinite(cur.item.t.DType, data)
		release()
		release = nil
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

// scanSource is one open file.
type scanSource struct {
	name string
	f    *os.File
	mmap bool // map chunks; false: pread them
}

func openSource(dir, file string, need int64) (*scanSource, error) {
	path := filepath.Join(dir, filepath.FromSlash(file))
	// Load refused non-regular files, but the folder may have changed since;
	// opening a FIFO would block.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file: %w", file, ErrNotRegular)
	}
	f, err := os.Open(path)
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
	adviseSequential(f)
	return &scanSource{name: file, f: f, mmap: useMmap}, nil
}

// bytes returns the file's bytes [begin, end), mapped or read into *buf, and
// a func that releases them; call it before asking for the next chunk.
func (s *scanSource) bytes(begin, end int64, buf *[]byte) ([]byte, func(), error) {
	if s.mmap {
		if data, unmap, err := mapRange(s.f, begin, end); err == nil {
			return data, unmap, nil
		}
		// a mapping can fail (address space, file system); pread still works
	}
	n := int(end - begin)
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	k, err := s.f.ReadAt(b, begin)
	if k == n {
		return b, func() {}, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = ErrTruncated
	}
	return nil, nil, fmt.Errorf("reading %d bytes at %d: %w", n, begin, err)
}

func (s *scanSource) close() { s.f.Close() }
