// Package wslock gives one phase0 run at a time a workspace: an exclusive
// flock on a lock file inside it, with the holder's pid, command and start
// time written into the file so a refused run can say who holds it.
package wslock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"phase0/internal/boundedfile"
)

// ErrHeld is wrapped when another process holds the lock.
var ErrHeld = errors.New("locked by another phase0 run")

// Holder is what the lock file says about the process holding it.
type Holder struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Started time.Time `json:"started"`
}

// String is the holder as a message names it.
func (h Holder) String() string {
	return fmt.Sprintf("pid %d (%s), since %s", h.PID, h.Command, h.Started.Format(time.RFC3339))
}

// Self describes the calling process.
func Self(started time.Time) Holder {
	return Holder{PID: os.Getpid(), Command: strings.Join(os.Args, " "), Started: started.UTC()}
}

// Lock is a held workspace lock.
type Lock struct {
	f        *os.File
	Path     string
	Acquired time.Time
}

// maxHolder bounds what is read back from a lock file.
const maxHolder = 4096

// Acquire takes the exclusive lock on path (created when absent) without
// waiting. When another process holds it the error wraps ErrHeld and names
// the holder as the file records it. The file is never removed: unlinking a
// lock file others may have open would let two runs hold "the" lock.
func Acquire(path string, self Holder) (*Lock, error) {
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("lock file %s is not a regular file (it is %s); remove it", path, boundedfile.Kind(st.Mode()))
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock file %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is held by %s", ErrHeld, path, describe(f))
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	// Rewrite in place: a rename would put a new inode under the path
	// while others hold or wait on the old one.
	data, err := json.Marshal(self)
	if err == nil {
		if err = f.Truncate(0); err == nil {
			if _, err = f.WriteAt(append(data, '\n'), 0); err == nil {
				err = f.Sync()
			}
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("writing lock file %s: %w", path, err)
	}
	return &Lock{f: f, Path: path, Acquired: time.Now()}, nil
}

// describe reads the holder from a lock file held by someone else.
func describe(f *os.File) string {
	b, err := io.ReadAll(io.LimitReader(f, maxHolder))
	if err != nil {
		return fmt.Sprintf("an unknown process (reading the lock file: %v)", err)
	}
	var h Holder
	if err := json.Unmarshal(b, &h); err != nil || h.PID == 0 {
		return "a process that has not yet recorded itself"
	}
	return h.String()
}

// Release empties the holder record and drops the lock.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Truncate(0)
	if e := unix.Flock(int(l.f.Fd()), unix.LOCK_UN); err == nil {
		err = e
	}
	if e := l.f.Close(); err == nil {
		err = e
	}
	l.f = nil
	return err
}
