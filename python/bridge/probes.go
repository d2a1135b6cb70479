package bridge

import (
	"os"
	"sync"
	"syscall"
	"time"
)

// Probes remembers what Inspect learned of each interpreter, so a process
// that runs many models (a `run @FILE` list) asks each interpreter once
// rather than starting it again for every model. An interpreter is known by
// its path and by the identity of the file it names (device, inode, size,
// modification time, after symlinks): a python replaced between two runs is
// asked again. Failures are remembered too: the next run would fail the
// same way. The zero value is not usable; NewProbes makes one.
type Probes struct {
	mu   sync.Mutex
	seen map[probeKey]probed
}

type probeKey struct {
	exe      string
	dev, ino uint64
	size     int64
	modTime  time.Time
	mode     os.FileMode
}

type probed struct {
	py  Python
	err error
}

// NewProbes is an empty memo.
func NewProbes() *Probes { return &Probes{seen: map[probeKey]probed{}} }

// Inspect is bridge.Inspect(exe), asked once per interpreter file. A nil
// *Probes inspects every time.
func (p *Probes) Inspect(exe string) (Python, error) {
	if p == nil {
		return Inspect(exe)
	}
	st, err := os.Stat(exe)
	if err != nil {
		return Inspect(exe) // it names why; not remembered
	}
	key := probeKey{exe: exe, size: st.Size(), modTime: st.ModTime(), mode: st.Mode()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		key.dev, key.ino = uint64(sys.Dev), sys.Ino
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.seen[key]; ok {
		return r.py, r.err
	}
	py, err := Inspect(exe)
	p.seen[key] = probed{py, err}
	return py, err
}
