package worker

import (
	"io"
	"sync"
)

// tailSize is how much of the child's combined stdout/stderr is kept.
const tailSize = 64 << 10

// ring keeps the last len(buf) bytes written to it and copies every write to
// an optional tee. A failing tee is dropped, never allowed to stall the child.
type ring struct {
	mu   sync.Mutex
	buf  []byte
	next int  // where the next byte goes
	full bool // buf has wrapped at least once
	tee  io.Writer
}

func newRing(size int, tee io.Writer) *ring {
	return &ring{buf: make([]byte, size), tee: tee}
}

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tee != nil {
		if _, err := r.tee.Write(p); err != nil {
			r.tee = nil
		}
	}
	n := len(p)
	if len(p) >= len(r.buf) {
		copy(r.buf, p[len(p)-len(r.buf):])
		r.next, r.full = 0, true
		return n, nil
	}
	c := copy(r.buf[r.next:], p)
	if c < len(p) {
		copy(r.buf, p[c:])
		r.full = true
	}
	r.next = (r.next + len(p)) % len(r.buf)
	if r.next == 0 && len(p) > 0 {
		r.full = true
	}
	return n, nil
}

// String returns the kept bytes, oldest first.
func (r *ring) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return string(r.buf[:r.next])
	}
	out := make([]byte, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	out = append(out, r.buf[:r.next]...)
	return string(out)
}
