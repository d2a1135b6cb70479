package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"phase0/internal/sttest"
	"phase0/read/safetensors"
)

const (
	scanTensors    = 4
	scanRows       = 8192
	scanCols       = 16384 // 4 × 8192 × 16384 bf16 = 1 GiB
	scanFreeMargin = 2 << 30
	scanRuns       = 3
	scanRatio      = 0.8
	fillChunk      = 8 << 20
	scanRSSMiB     = 256
)

// scan times safetensors.Load + Scan over a 1 GiB file of random finite
// bf16 values (plus two planted non-finite values per tensor) against `cat FILE > /dev/null`, both on a warm page cache.
func (b *bench) scan() error {
	dir, err := os.MkdirTemp("", "phase0bench-scan-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	if err := checkFree(dir, int64(scanTensors*scanRows*scanCols*2)+scanFreeMargin); err != nil {
		return err
	}

	file := filepath.Join(dir, "model.safetensors")
	if err := writeRandomBF16(file); err != nil {
		return err
	}
	size, err := fileSize(file)
	if err != nil {
		return err
	}

	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer devnull.Close()
	cat := func() (time.Duration, error) {
		cmd := exec.Command("cat", file)
		cmd.Stdout = devnull
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("cat %s: %w", file, err)
		}
		return time.Since(start), nil
	}
	scan := func() (time.Duration, error) {
		start := time.Now()
		inv, err := safetensors.Load(os.DirFS(dir))
		if err != nil {
			return 0, err
		}
		bad, err := safetensors.Scan(context.Background(), dir, inv, 0, nil)
		if err != nil {
			return 0, err
		}
		d := time.Since(start)
		if err := checkPlanted(bad); err != nil {
			return 0, err
		}
		return d, nil
	}
	if _, err := cat(); err != nil { // warm the page cache
		return err
	}
	bestCat, err := best(scanRuns, cat)
	if err != nil {
		return err
	}
	bestScan, err := best(scanRuns, scan)
	if err != nil {
		return err
	}
	gibps := func(d time.Duration) float64 { return float64(size) / (1 << 30) / d.Seconds() }
	catRate, scanRate := gibps(bestCat), gibps(bestScan)
	ratio := scanRate / catRate
	b.add("scan, 1 GiB bf16 warm (Load+Scan, best of 3)", fmt.Sprintf("%.2f GiB/s", scanRate), "-", true)
	b.add("cat FILE >/dev/null, same file (best of 3)", fmt.Sprintf("%.2f GiB/s", catRate), "-", true)
	b.add("scan / cat throughput", fmt.Sprintf("%.2fx", ratio), ">= 0.80x", ratio >= scanRatio)

	return b.scanRSS(dir, size)
}

// checkFree fails unless dir's filesystem has need bytes free.
func checkFree(dir string, need int64) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("checking free space in %s: %w", dir, err)
	}
	if free := int64(st.Bavail) * st.Bsize; free < need {
		return fmt.Errorf("%s has %.1f GiB free, need %.1f GiB", dir, float64(free)/(1<<30), float64(need)/(1<<30))
	}
	return nil
}

// scanRSS measures the scan's peak RSS over dir's file of size bytes: per
// process, so the scan runs again in a child of its own.
func (b *bench) scanRSS(dir string, size int64) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	r, err := runChild(dir, nil, exe, scanChildArg, dir)
	if err != nil {
		return err
	}
	// The child reports its own high-water mark: rusage's maxrss of a
	// child can include the parent's RSS at fork time.
	kib, err := strconv.ParseInt(strings.TrimSpace(string(r.stdout)), 10, 64)
	if err != nil {
		return fmt.Errorf("the scan child printed %q, want its peak RSS in KiB", r.stdout)
	}
	rssMiB := float64(kib) / 1024
	b.add("scan peak RSS, 1 GiB bf16 (child: Load+Scan)", fmt.Sprintf("%.1f MiB (%.1f%% of the file)", rssMiB, 100*rssMiB*(1<<20)/float64(size)), "<= 256 MiB", rssMiB <= scanRSSMiB)
	return nil
}

// scanChildArg makes phase0bench scan one folder and exit, so the parent
// can read the scan's peak RSS from the child's rusage.
const scanChildArg = "__scan"

// scanChild is the child side of the peak-RSS row.
func scanChild(dir string) error {
	inv, err := safetensors.Load(os.DirFS(dir))
	if err != nil {
		return err
	}
	bad, err := safetensors.Scan(context.Background(), dir, inv, 0, nil)
	if err != nil {
		return err
	}
	if err := checkPlanted(bad); err != nil {
		return err
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Println(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return nil
		}
	}
	return fmt.Errorf("no VmHWM in /proc/self/status")
}

func best(n int, f func() (time.Duration, error)) (time.Duration, error) {
	var b time.Duration
	for i := range n {
		d, err := f()
		if err != nil {
			return 0, err
		}
		if i == 0 || d < b {
			b = d
		}
	}
	return b, nil
}

func fileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// writeRandomBF16 lays the file out sparse with safetensors.WriteFile, then
// fills every tensor with random finite bf16 values, one chunk at a time.
func writeRandomBF16(path string) error {
	ts := make([]sttest.WriteTensor, scanTensors)
	for i := range ts {
		ts[i] = sttest.WriteTensor{
			Name:  fmt.Sprintf("model.layers.%d.mlp.up_proj.weight", i),
			DType: "BF16",
			Shape: []int64{scanRows, scanCols},
		}
	}
	if err := sttest.WriteFile(path, ts, map[string]string{"format": "pt"}); err != nil {
		return err
	}
	inv, err := safetensors.Load(os.DirFS(filepath.Dir(path)))
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, fillChunk)
	for _, name := range inv.Names() {
		t, _ := inv.Tensor(name)
		for off := t.Begin; off < t.End; off += fillChunk {
			chunk := buf[:min(fillChunk, t.End-off)]
			fillBF16(rng, chunk)
			if _, err := f.WriteAt(chunk, off); err != nil {
				f.Close()
				return fmt.Errorf("filling %s in %s: %w", name, path, err)
			}
		}
	}
	// One NaN at each tensor's last element and one +Inf in its middle, so
	// the scan's answer proves it read every tensor to the end.
	for _, name := range inv.Names() {
		t, _ := inv.Tensor(name)
		mid := t.Begin + (t.Bytes()/2)&^1
		for off, bits := range map[int64]uint16{t.End - 2: 0x7fc1, mid: 0x7f80} {
			if _, err := f.WriteAt(binary.LittleEndian.AppendUint16(nil, bits), off); err != nil {
				f.Close()
				return fmt.Errorf("planting a non-finite value in %s: %w", name, err)
			}
		}
	}
	return f.Close()
}

// checkPlanted wants exactly the values writeRandomBF16 planted: one NaN and
// one Inf in each tensor.
func checkPlanted(bad []safetensors.NonFinite) error {
	if len(bad) != scanTensors {
		return fmt.Errorf("scan reported non-finite values in %d tensors, want %d (one NaN and one Inf planted in each): %+v", len(bad), scanTensors, bad)
	}
	for _, nf := range bad {
		if nf.NaN != 1 || nf.Inf != 1 {
			return fmt.Errorf("scan counted %d NaN and %d Inf in %s, want 1 and 1", nf.NaN, nf.Inf, nf.Name)
		}
	}
	return nil
}

// fillBF16 writes random bf16 values of either sign with exponents 120–123
// (magnitudes about 2^-7 to 2^-4, like trained weights) and random mantissas:
// all finite. len(b) must be a multiple of 8.
func fillBF16(rng *rand.Rand, b []byte) {
	const keep, set = 0x81ff81ff81ff81ff, 0x3c003c003c003c00
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64()&keep|set)
	}
}
