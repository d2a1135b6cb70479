package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
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
	var ts []WriteTensor
	for i := 0; i*perTensor < mb; i++ {
		n := min(perTensor, mb-i*perTensor)
		data := make([]byte, 0, n<<20)
		for range n {
			data = append(data, block...)
		}
		ts = append(ts, WriteTensor{Name: fmt.Sprintf("t%03d", i), DType: "BF16", Shape: []int64{int64(n) << 19}, Data: data})
	}
	dir := b.TempDir()
	if err := WriteFile(filepath.Join(dir, SingleFile), ts, nil); err != nil {
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
					got, err := Scan(dir, inv, workers, nil)
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

func BenchmarkLoad8BShape(b *testing.B) {
	dir := b.TempDir()
	if err := Write8BShape(dir); err != nil {
		b.Fatal(err)
	}
	fsys := os.DirFS(dir)
	for b.Loop() {
		inv, err := Load(fsys)
		if err != nil || len(inv.Tensors) != 291 {
			b.Fatalf("Load: %v", err)
		}
	}
}
