package npu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// LockPath is the lock file upstream's kernel cache takes (Python filelock,
// BSD flock(2)) around loading and every kernel run, so our runs and theirs
// never interleave on the device.
const LockPath = "/tmp/npu.lock"

// lockPoll is how often a busy lock is retried; filelock polls the same way.
const lockPoll = 20 * time.Millisecond

// fileLock is an exclusive flock on a path, held between acquire and release.
type fileLock struct {
	path string
	f    *os.File
}

// acquire blocks until the lock is ours or ctx ends.
func (l *fileLock) acquire(ctx context.Context) error {
	// O_TRUNC and 0644 as filelock opens it, so either side may create it.
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("npu: open lock file: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			l.f = f
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return fmt.Errorf("npu: lock %s: %w", l.path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return fmt.Errorf("npu: waiting for %s (another NPU user holds it): %w", l.path, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

func (l *fileLock) release() {
	if l.f == nil {
		return
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}
