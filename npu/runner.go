package npu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrNoXRT is returned by newRunner in builds without the xrt tag.
var ErrNoXRT = errors.New("npu: built without XRT (rebuild with -tags xrt)")

// maxInstrBytes bounds the instruction stream read from disk; real ones are
// kilobytes to a few megabytes.
const maxInstrBytes = 256 << 20

// Artifact is a compiled kernel: an xclbin with its instruction stream, or
// an ELF that carries its instructions inside.
type Artifact struct {
	Binary       string // .xclbin or .elf
	Instructions string // insts.bin (xclbin only)
	// Kernel is the kernel name; for an xclbin the first kernel whose name
	// contains it is used, as upstream's backend does.
	Kernel string
}

// IsELF reports whether the artifact is an ELF (decided by extension, as upstream).
func (a Artifact) IsELF() bool { return strings.HasSuffix(a.Binary, ".elf") }

// Stats counts what one run moved, mirroring upstream's profiler breakdown.
type Stats struct {
	Written      int   // buffers written to the device
	BytesWritten int64 // bytes in them
	ReadBack     int   // buffers synced back
	FirstRun     bool  // buffers were allocated for the key on this run
}

// Runner runs loaded kernels, reusing one set of buffer objects per key.
// It is not safe for concurrent use; the device lock serialises processes.
type Runner struct {
	backend Backend
	lock    fileLock
	kernels map[string]*loaded
}

type loaded struct {
	art          Artifact
	k            Kernel
	instrSynced  bool
	sets         map[string]*bufferSet
	instrByteLen int
}

// bufferSet is the buffers of one key, sized by the arguments of its first run.
type bufferSet struct {
	bufs  []Buffer
	sizes []int
	types []DType
}

// RunnerOption configures newRunner.
type RunnerOption func(*Runner)

// withBackend runs on b instead of XRT (tests pass a fake).
func withBackend(b Backend) RunnerOption { return func(r *Runner) { r.backend = b } }

// withLockPath uses another lock file than LockPath (tests use a temp dir).
func withLockPath(path string) RunnerOption { return func(r *Runner) { r.lock.path = path } }

// newRunner returns a Runner on XRT's device 0, or ErrNoXRT in builds
// without the xrt tag (unless a backend is given).
func newRunner(opts ...RunnerOption) (*Runner, error) {
	r := &Runner{lock: fileLock{path: LockPath}, kernels: map[string]*loaded{}}
	for _, o := range opts {
		o(r)
	}
	if r.backend == nil {
		b, err := newXRTBackend()
		if err != nil {
			return nil, err
		}
		r.backend = b
	}
	return r, nil
}

// Load loads artifact a under name, holding the device lock while XRT
// registers it. Loading a name twice is an error: unload by Close.
func (r *Runner) Load(ctx context.Context, name string, a Artifact) error {
	if _, dup := r.kernels[name]; dup {
		return fmt.Errorf("npu: kernel %q is already loaded", name)
	}
	if a.Kernel == "" {
		return fmt.Errorf("npu: load %q: artifact %s names no kernel", name, a.Binary)
	}
	if _, err := os.Stat(a.Binary); err != nil {
		return fmt.Errorf("npu: load %q: %w", name, err)
	}
	var instr []byte
	if !a.IsELF() {
		var err error
		if instr, err = readInstructions(a.Instructions); err != nil {
			return fmt.Errorf("npu: load %q: %w", name, err)
		}
	}
	if err := r.lock.acquire(ctx); err != nil {
		return err
	}
	k, err := r.backend.Load(a, instr)
	r.lock.release()
	if err != nil {
		return fmt.Errorf("npu: load %q from %s (kernel %q): %w", name, a.Binary, a.Kernel, err)
	}
	r.kernels[name] = &loaded{art: a, k: k, sets: map[string]*bufferSet{}, instrByteLen: len(instr)}
	return nil
}

// readInstructions reads an instruction stream: whole 32-bit words, bounded.
func readInstructions(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("an xclbin artifact needs an instruction file")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxInstrBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", path, err)
	case len(b) > maxInstrBytes:
		return nil, fmt.Errorf("%s: instruction stream larger than %d bytes", path, maxInstrBytes)
	case len(b) == 0 || len(b)%4 != 0:
		return nil, fmt.Errorf("%s: %d bytes is not a non-empty stream of 32-bit instruction words", path, len(b))
	}
	return b, nil
}

// Run runs kernel name on args. key selects the buffer set (empty: the
// kernel name): runs sharing a key reuse its buffers, so Static and Scratch
// arguments are written on its first run only and must keep their sizes.
// Output and InOut arguments are copied back into the caller's Data.
func (r *Runner) Run(ctx context.Context, name, key string, args ...Arg) (Stats, error) {
	var st Stats
	l, ok := r.kernels[name]
	if !ok {
		return st, fmt.Errorf("npu: kernel %q is not loaded (call Load first)", name)
	}
	if key == "" {
		key = name
	}
	if len(args) == 0 {
		return st, fmt.Errorf("npu: run %q: no arguments", name)
	}
	for i, a := range args {
		if err := a.validate(i); err != nil {
			return st, fmt.Errorf("npu: run %q key %q: %w", name, key, err)
		}
	}
	set := l.sets[key]
	if set != nil {
		if err := set.matches(args); err != nil {
			return st, fmt.Errorf("npu: run %q key %q: %w", name, key, err)
		}
	}

	if err := r.lock.acquire(ctx); err != nil {
		return st, err
	}
	defer r.lock.release()

	if set == nil {
		var err error
		if set, err = allocSet(l.k, args); err != nil {
			return st, fmt.Errorf("npu: run %q key %q: %w", name, key, err)
		}
		st.FirstRun = true
	}
	if !l.instrSynced {
		if err := l.k.SyncInstructions(); err != nil {
			set.close()
			return st, fmt.Errorf("npu: run %q: sync instructions (%d bytes): %w", name, l.instrByteLen, err)
		}
		l.instrSynced = true
	}
	if err := r.exec(l.k, set, args, st.FirstRun, &st); err != nil {
		if st.FirstRun {
			// A first run that failed may have left static inputs unwritten;
			// dropping the set makes the next run write them again.
			set.close()
		}
		return st, fmt.Errorf("npu: run %q key %q: %w", name, key, err)
	}
	l.sets[key] = set
	return st, nil
}

func (r *Runner) exec(k Kernel, set *bufferSet, args []Arg, first bool, st *Stats) error {
	for i, a := range args {
		if !a.Role.writesEveryRun() && !(first && a.Role.writesFirstRun()) {
			continue
		}
		copy(set.bufs[i].Map(), a.Data)
		if err := set.bufs[i].Sync(true); err != nil {
			return fmt.Errorf("%s: sync to device: %w", a.label(i), err)
		}
		st.Written++
		st.BytesWritten += int64(len(a.Data))
	}
	if err := k.Run(set.bufs); err != nil {
		return fmt.Errorf("kernel run: %w", err)
	}
	for i, a := range args {
		if !a.Role.readsBack() {
			continue
		}
		if err := set.bufs[i].Sync(false); err != nil {
			return fmt.Errorf("%s: sync from device: %w", a.label(i), err)
		}
		copy(a.Data, set.bufs[i].Map())
		st.ReadBack++
	}
	return nil
}

func allocSet(k Kernel, args []Arg) (*bufferSet, error) {
	set := &bufferSet{}
	for i, a := range args {
		b, err := k.Alloc(i, len(a.Data))
		if err != nil {
			set.close()
			return nil, fmt.Errorf("%s: allocate %d bytes: %w", a.label(i), len(a.Data), err)
		}
		if got := len(b.Map()); got < len(a.Data) {
			b.Close()
			set.close()
			return nil, fmt.Errorf("%s: buffer maps %d bytes, need %d", a.label(i), got, len(a.Data))
		}
		set.bufs = append(set.bufs, b)
		set.sizes = append(set.sizes, len(a.Data))
		set.types = append(set.types, a.DType)
	}
	return set, nil
}

// matches checks a later run's arguments against the buffers of the key.
func (s *bufferSet) matches(args []Arg) error {
	if len(args) != len(s.bufs) {
		return fmt.Errorf("%d arguments, but the key's buffers were made for %d", len(args), len(s.bufs))
	}
	for i, a := range args {
		if len(a.Data) != s.sizes[i] || a.DType != s.types[i] {
			return fmt.Errorf("%s: %d bytes of %s, but the key's buffer holds %d bytes of %s (use another key for other shapes)",
				a.label(i), len(a.Data), a.DType, s.sizes[i], s.types[i])
		}
	}
	return nil
}

func (s *bufferSet) close() {
	for _, b := range s.bufs {
		_ = b.Close()
	}
	s.bufs = nil
}

// Close frees every buffer and kernel. The Runner cannot be used afterwards.
func (r *Runner) Close() error {
	var errs []error
	for name, l := range r.kernels {
		for _, s := range l.sets {
			s.close()
		}
		if err := l.k.Close(); err != nil {
			errs = append(errs, fmt.Errorf("npu: close %q: %w", name, err))
		}
	}
	r.kernels = map[string]*loaded{}
	return errors.Join(errs...)
}
