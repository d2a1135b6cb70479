package safetensors

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"phase0/internal/sttest"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// benchScanFile writes a BF16 checkpoint of PHASE0_SCAN_BENCH_MB MiB
// (default 256) with weight-like finite values into a per-benchmark dir.
func benchScanFile(b *testing.B) (string, *Inventory) {
	b.Helper()
	mb := 256
	if s := os.Getenv("PHASE0_SCAN_BENCH_MB"); s != "" {
		var err error
		if mb, err = strconv.Atoi(s); err != nil || mb < 1 {
			b.Fatalf("PHASE0_SCAN_BENCH_MB=%q: want a positive integer", s)
		}
	}
	// one 1 MiB block of bf16 N(0, 0.02) values, repeated
	r := rand.New(rand.NewPCG(7, 8))
	block := make([]byte, 1<<20)
	for i := 0; i < len(block); i += 2 {
		binary.LittleEndian.PutUint16(block[i:], uint16(math.Float32bits(float32(r.NormFloat64()*0.02))>>16))
	}
	const perTensor = 64 // MiB
	var ts []sttest.WriteTensor
	for i := 0; i*perTensor < mb; i++ {
		n := min(perTensor, mb-i*perTensor)
		data := make([]byte, 0, n<<20)
		for range n {
			data = append(data, block...)
		}
		ts = append(ts, sttest.WriteTensor{Name: fmt.Sprintf("t%03d", i), DType: "BF16", Shape: []int64{int64(n) << 19}, Data: data})
	}
	dir := b.TempDir()
	if err := sttest.WriteFile(filepath.Join(dir, SingleFile), ts, nil); err != nil {
		b.Fatal(err)
	}
	inv, err := Load(os.DirFS(dir))
	if err != nil {
		b.Fatal(err)
	}
	return dir, inv
}

func BenchmarkScan(b *testing.B) {
	dir, inv := benchScanFile(b)
	defer func(m bool) { useMmap = m }(useMmap)
	for _, mode := range []struct {
		name string
		mmap bool
	}{{"mmap", true}, {"pread", false}} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d", mode.name, workers), func(b *testing.B) {
				useMmap = mode.mmap
				b.SetBytes(inv.TotalBytes)
				for b.Loop() {
					got, err := Scan(context.Background(), dir, inv, workers, nil)
					if err != nil || len(got) != 0 {
						b.Fatalf("Scan = %v, %v", got, err)
					}
				}
			})
		}
	}
}

// BenchmarkCountBF16 is the in-memory kernel alone.
func BenchmarkCountBF16(b *testing.B) {
	buf := make([]byte, 1<<20)
	for i := 0; i < len(buf); i += 2 {
		binary.LittleEndian.PutUint16(buf[i:], 0x3C00)
	}
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if n, i := count16(buf, bf16Exp, bf16Mant); n+i != 0 {
			b.Fatal(n, i)
		}
	}
}

// BenchmarkReadHeader parses one header of 100k tensors; tensors/s is
// b.N*100k over the elapsed time.
func BenchmarkReadHeader(b *testing.B) {
	const n = 100_000
	ts := make([]sttest.WriteTensor, n)
	for i := range ts {
		ts[i] = sttest.WriteTensor{Name: fmt.Sprintf("model.layers.%d.self_attn.q_proj.weight", i), DType: "BF16", Shape: []int64{64, int64(i%7 + 1)}}
	}
	path := filepath.Join(b.TempDir(), SingleFile)
	if err := sttest.WriteFile(path, ts, map[string]string{"format": "pt"}); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu := cpuTime()
	for b.Loop() {
		h, err := ReadHeader(f, fi.Size(), SingleFile)
		if err != nil || len(h.Tensors) != n {
			b.Fatalf("ReadHeader: %v", err)
		}
	}
	reportRates(b, n, cpuTime()-cpu)
}

// BenchmarkLoadSharded loads a 73,728-tensor checkpoint in 64 shards (the
// tensor count of a 8192-layer Llama); tensors/s is the inventory rate.
func BenchmarkLoadSharded(b *testing.B) {
	const n, shards = 73_728, 64
	ts := make([]sttest.WriteTensor, n)
	for i := range ts {
		ts[i] = sttest.WriteTensor{Name: fmt.Sprintf("model.layers.%d.mlp.up_proj.weight", i), DType: "BF16", Shape: []int64{512, 256}}
	}
	dir := b.TempDir()
	if err := sttest.WriteSharded(dir, ts, shards); err != nil {
		b.Fatal(err)
	}
	fsys := os.DirFS(dir)
	b.ResetTimer()
	cpu := cpuTime()
	for b.Loop() {
		inv, err := Load(fsys)
		if err != nil || inv.Len() != n {
			b.Fatalf("Load: %v", err)
		}
	}
	reportRates(b, n, cpuTime()-cpu)
}

// reportRates reports tensors per second of wall time and of CPU time (the
// process's user+system time, GC included): on a shared machine the second
// moves less with other load.
func reportRates(b *testing.B, n int, cpu time.Duration) {
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tensors/s")
	b.ReportMetric(float64(n)*float64(b.N)/cpu.Seconds(), "tensors/cpu-s")
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
