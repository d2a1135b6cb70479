package safetensors

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"phase0/internal/sttest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// floatKind generates finite values and plants chosen non-finite bit patterns.
type floatKind struct {
	dtype  string
	size   int
	finite func(r *rand.Rand) uint64 // a finite value's bits, by construction
	nans   []uint64                  // NaN encodings to plant (quiet, signalling, negative)
	infs   []uint64                  // +Inf, -Inf
}

var floatKinds = []floatKind{
	{
		dtype: "BF16", size: 2,
		finite: func(r *rand.Rand) uint64 {
			// the top half of a finite float32, plus edge values
			edges := []uint64{0x7F7F, 0xFF7F, 0x0001, 0x8000, 0x7F00, 0x0000}
			if r.IntN(8) == 0 {
				return edges[r.IntN(len(edges))]
			}
			return uint64(math.Float32bits(float32(r.NormFloat64()*100)) >> 16)
		},
		nans: []uint64{0x7FC0, 0xFFC0, 0x7F81, 0xFFFF, 0x7FFF},
		infs: []uint64{0x7F80, 0xFF80},
	},
	{
		dtype: "F16", size: 2,
		finite: func(r *rand.Rand) uint64 {
			return uint64(r.IntN(2))<<15 | uint64(r.IntN(31))<<10 | uint64(r.IntN(1024))
		},
		nans: []uint64{0x7E00, 0xFE00, 0x7C01, 0xFFFF},
		infs: []uint64{0x7C00, 0xFC00},
	},
	{
		dtype: "F32", size: 4,
		finite: func(r *rand.Rand) uint64 {
			edges := []float32{math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, 0, float32(math.Copysign(0, -1))}
			if r.IntN(8) == 0 {
				return uint64(math.Float32bits(edges[r.IntN(len(edges))]))
			}
			return uint64(math.Float32bits(float32(r.NormFloat64())))
		},
		nans: []uint64{uint64(math.Float32bits(float32(math.NaN()))), 0x7F800001, 0xFFFFFFFF, 0xFFC00000},
		infs: []uint64{uint64(math.Float32bits(float32(math.Inf(1)))), uint64(math.Float32bits(float32(math.Inf(-1))))},
	},
	{
		dtype: "F64", size: 8,
		finite: func(r *rand.Rand) uint64 {
			if r.IntN(8) == 0 {
				return math.Float64bits(math.MaxFloat64)
			}
			return math.Float64bits(r.NormFloat64())
		},
		nans: []uint64{math.Float64bits(math.NaN()), 0x7FF0000000000001, 0xFFFFFFFFFFFFFFFF},
		infs: []uint64{math.Float64bits(math.Inf(1)), math.Float64bits(math.Inf(-1))},
	},
}

// plantedTensor builds n elements with exactly nan NaNs and inf Infs.
// Positions include the first and last element so block edges and tails are hit.
func plantedTensor(r *rand.Rand, k floatKind, name string, n, nan, inf int) sttest.WriteTensor {
	data := make([]byte, n*k.size)
	put := func(i int, v uint64) {
		switch k.size {
		case 2:
			binary.LittleEndian.PutUint16(data[i*2:], uint16(v))
		case 4:
			binary.LittleEndian.PutUint32(data[i*4:], uint32(v))
		case 8:
			binary.LittleEndian.PutUint64(data[i*8:], v)
		}
	}
	for i := range n {
		put(i, k.finite(r))
	}
	pos := r.Perm(n)
	if nan+inf > 1 && n > 1 {
		// move 0 and n-1 to the front so they are planted
		for j, want := range []int{0, n - 1} {
			for i := range pos {
				if pos[i] == want {
					pos[i], pos[j] = pos[j], pos[i]
				}
			}
		}
	}
	for i := range nan {
		put(pos[i], k.nans[i%len(k.nans)])
	}
	for i := range inf {
		put(pos[nan+i], k.infs[i%len(k.infs)])
	}
	return sttest.WriteTensor{Name: name, DType: k.dtype, Shape: []int64{int64(n)}, Data: data}
}

// scanFixture writes two files without index: odd sizes, unaligned starts,
// integer tensors full of 0xFF that must be ignored. It returns the dir and
// the expected result.
func scanFixture(t *testing.T) (string, []NonFinite) {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	var want []NonFinite
	for f, file := range []string{"a.safetensors", "b.safetensors"} {
		ff := make([]byte, 3)
		for i := range ff {
			ff[i] = 0xFF
		}
		ts := []sttest.WriteTensor{{Name: file + ".pad", DType: "U8", Shape: []int64{3}, Data: ff}} // misaligns what follows
		for _, k := range floatKinds {
			for j, c := range []struct{ n, nan, inf int }{{1001, 7, 3}, {4096, 0, 0}, {37, 0, 2}, {1, 1, 0}, {5000, 40, 0}} {
				name := k.dtype + "." + string(rune('a'+f)) + string(rune('0'+j))
				ts = append(ts, plantedTensor(r, k, name, c.n, c.nan, c.inf))
				if c.nan+c.inf > 0 {
					want = append(want, NonFinite{Name: name, NaN: int64(c.nan), Inf: int64(c.inf)})
				}
			}
		}
		ints := make([]byte, 64)
		for i := range ints {
			ints[i] = 0xFF
		}
		ts = append(ts,
			sttest.WriteTensor{Name: file + ".i32", DType: "I32", Shape: []int64{16}, Data: ints},
			sttest.WriteTensor{Name: file + ".f8", DType: "F8_E4M3", Shape: []int64{64}, Data: ints},
			sttest.WriteTensor{Name: file + ".empty", DType: "F32", Shape: []int64{0, 4}, Data: []byte{}},
		)
		mustWrite(t, dir, file, ts...)
	}
	sortNonFinite(want)
	return dir, want
}

func sortNonFinite(s []NonFinite) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j].Name < s[i].Name {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func TestScanCountsExactly(t *testing.T) {
	dir, want := scanFixture(t)
	inv, err := Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer func(c int64, m bool) { scanChunkSize, useMmap = c, m }(scanChunkSize, useMmap)
	for _, cfg := range []struct {
		name    string
		chunk   int64
		mmap    bool
		workers int
	}{
		{"mmap, one worker, default chunks", 8 << 20, true, 1},
		{"mmap, three workers, 64-byte chunks", 64, true, 3},
		{"pread, two workers, 40-byte chunks", 40, false, 2},
		{"pread, default workers, 1-byte chunks", 1, false, 0},
	} {
		t.Run(cfg.name, func(t *testing.T) {
			scanChunkSize, useMmap = cfg.chunk, cfg.mmap
			got, err := Scan(context.Background(), dir, inv, cfg.workers, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %v\nwant %v", got, want)
			}
		})
	}
}

func TestScanSharded(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	bf16, f32 := floatKinds[0], floatKinds[2]
	mustWrite(t, dir, shard1, plantedTensor(r, bf16, "a", 777, 5, 1), plantedTensor(r, f32, "b", 100, 0, 0))
	mustWrite(t, dir, shard2, plantedTensor(r, f32, "c", 333, 2, 9))
	mustIndex(t, dir, map[string]string{"a": shard1, "b": shard1, "c": shard2})
	inv, err := Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Scan(context.Background(), dir, inv, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []NonFinite{{Name: "a", NaN: 5, Inf: 1}, {Name: "c", NaN: 2, Inf: 9}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestScanProgress(t *testing.T) {
	dir, _ := scanFixture(t)
	inv, err := Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	var wantTotal int64
	for _, tn := range inv.Tensors() {
		if scannable(tn.DType) {
			wantTotal += tn.Bytes()
		}
	}
	var calls [][2]int64
	if _, err := Scan(context.Background(), dir, inv, 2, func(done, total int64) { calls = append(calls, [2]int64{done, total}) }); err != nil {
		t.Fatal(err)
	}
	if len(calls) == 0 {
		t.Fatal("progress never called")
	}
	if last := calls[len(calls)-1]; last != [2]int64{wantTotal, wantTotal} {
		t.Errorf("last progress call %v, want [%d %d]", last, wantTotal, wantTotal)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i][0] < calls[i-1][0] || calls[i][0] > calls[i][1] {
			t.Errorf("progress not monotonic or past total: %v", calls)
		}
	}
}

func TestScanTruncatedAfterLoad(t *testing.T) {
	dir, _ := scanFixture(t)
	inv, err := Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "b.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "b.safetensors"), fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	_, err = Scan(context.Background(), dir, inv, 2, nil)
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("got %v, want ErrTruncated", err)
	}
}

func TestScanMissingFile(t *testing.T) {
	dir, _ := scanFixture(t)
	inv, err := Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "a.safetensors")); err != nil {
		t.Fatal(err)
	}
	if _, err := Scan(context.Background(), dir, inv, 1, nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v, want a not-exist error", err)
	}
}

// TestCountKernels checks the word-at-a-time counters against a plain
// per-element count through math, over every 16-bit pattern and random 32/64-bit ones.
func TestCountKernels(t *testing.T) {
	all16 := make([]byte, 2*65536)
	var bfNaN, bfInf, hNaN, hInf int64
	for v := range 65536 {
		binary.LittleEndian.PutUint16(all16[2*v:], uint16(v))
		f := math.Float32frombits(uint32(v) << 16) // bf16 is the top half of a float32
		switch {
		case math.IsNaN(float64(f)):
			bfNaN++
		case math.IsInf(float64(f), 0):
			bfInf++
		}
		if e, m := v>>10&0x1F, v&0x3FF; e == 0x1F && m != 0 {
			hNaN++
		} else if e == 0x1F {
			hInf++
		}
	}
	for off := range 3 { // also at an odd address and with a ragged tail
		b := append(make([]byte, 1, len(all16)+1), all16[off*2:]...)[1:]
		wantNaN, wantInf := bfNaN, bfInf
		for v := range off {
			if f := math.Float32frombits(uint32(v) << 16); math.IsNaN(float64(f)) {
				wantNaN--
			} else if math.IsInf(float64(f), 0) {
				wantInf--
			}
		}
		if n, i := count16(b, bf16Exp, bf16Mant); n != wantNaN || i != wantInf {
			t.Errorf("bf16 offset %d: %d NaN %d Inf, want %d %d", off, n, i, wantNaN, wantInf)
		}
	}
	if n, i := count16(all16, f16Exp, f16Mant); n != hNaN || i != hInf || hNaN != 2046 || hInf != 2 {
		t.Errorf("f16: %d NaN %d Inf, want %d %d", n, i, hNaN, hInf)
	}
	r := rand.New(rand.NewPCG(5, 6))
	b32 := make([]byte, 4*10007)
	b64 := make([]byte, 8*10007)
	var n32, i32, n64, i64 int64
	for k := range 10007 {
		v := r.Uint32()
		if r.IntN(4) == 0 {
			v |= 0x7F800000 // many exponent-all-ones patterns
		}
		binary.LittleEndian.PutUint32(b32[4*k:], v)
		if f := float64(math.Float32frombits(v)); math.IsNaN(f) {
			n32++
		} else if math.IsInf(f, 0) {
			i32++
		}
		w := r.Uint64()
		if r.IntN(4) == 0 {
			w |= 0x7FF0000000000000
		}
		binary.LittleEndian.PutUint64(b64[8*k:], w)
		if f := math.Float64frombits(w); math.IsNaN(f) {
			n64++
		} else if math.IsInf(f, 0) {
			i64++
		}
	}
	if n, i := count32(b32); n != n32 || i != i32 {
		t.Errorf("f32: %d NaN %d Inf, want %d %d", n, i, n32, i32)
	}
	if n, i := count64(b64); n != n64 || i != i64 {
		t.Errorf("f64: %d NaN %d Inf, want %d %d", n, i, n64, i64)
	}
}

// TestScanFaultBecomesError shrinks a file after it is mapped: reading the
// vanished pages raises SIGBUS, which must come back as ErrTruncated.
func TestScanFaultBecomesError(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir, SingleFile, sttest.WriteTensor{Name: "w", DType: "F32", Shape: []int64{1 << 18}, Data: make([]byte, 1<<20)})
	inv, err := Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	w, _ := inv.Tensor("w")
	src, err := openSource(dir, SingleFile, w.End)
	if err != nil {
		t.Fatal(err)
	}
	defer src.close()
	if _, _, err := mapRange(src.f, w.Begin, w.End); err != nil {
		t.Skipf("files are not memory-mapped on this platform: %v", err)
	}
	if err := os.Truncate(filepath.Join(dir, SingleFile), w.Begin); err != nil {
		t.Fatal(err)
	}
	item := &scanItem{t: w, src: src}
	chunks := []scanChunk{{item: item, begin: w.Begin, end: w.End}}
	var next, done atomic.Int64
	var failed atomic.Bool
	err = scanWorker(context.Background(), chunks, &next, &done, &failed)
	if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), `tensor "w"`) {
		t.Fatalf("got %v, want ErrTruncated naming the tensor", err)
	}
}

// TestScanCancel starts a scan of a 64 GiB sparse file (reading it all
// would take many seconds), cancels it once it is under way and wants it
// back within a few chunks' time, with context.Canceled and without having
// read the file. Only the few chunks read before the cancel touch memory.
func TestScanCancel(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir, SingleFile, sttest.WriteTensor{Name: "w", DType: "BF16", Shape: []int64{1 << 35}})
	inv, err := Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, mmap := range []bool{true, false} {
		t.Run(fmt.Sprintf("mmap=%t", mmap), func(t *testing.T) {
			defer func(m bool) { useMmap = m }(useMmap)
			useMmap = mmap
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := make(chan struct{})
			var once sync.Once
			type result struct {
				err  error
				done int64
			}
			res := make(chan result, 1)
			var last atomic.Int64
			go func() {
				_, err := Scan(ctx, dir, inv, 2, func(done, _ int64) {
					last.Store(done)
					if done > 0 {
						once.Do(func() { close(started) })
					}
				})
				res <- result{err, last.Load()}
			}()
			select {
			case <-started:
			case r := <-res:
				t.Fatalf("scan ended before it was cancelled: %v", r.err)
			case <-time.After(30 * time.Second):
				t.Fatal("scan made no progress in 30 s")
			}
			cancelled := time.Now()
			cancel()
			select {
			case r := <-res:
				if d := time.Since(cancelled); d > 500*time.Millisecond {
					t.Errorf("Scan returned %v after cancel, want about 100 ms", d)
				}
				if !errors.Is(r.err, context.Canceled) {
					t.Errorf("got %v, want context.Canceled", r.err)
				}
				if r.done >= inv.TotalBytes {
					t.Errorf("progress reached %d of %d bytes: the scan was not stopped", r.done, inv.TotalBytes)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Scan still running 10 s after cancel")
			}
		})
	}
}
