package atomicfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Exchange swaps the names a and b in one step (renameat2 with
// RENAME_EXCHANGE): a reader, or a kill, sees either both old or both new.
// Both must exist, on one filesystem. ErrNoExchange is wrapped when the
// filesystem cannot exchange.
func Exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return &os.LinkError{Op: "exchange", Old: a, New: b, Err: errors.Join(ErrNoExchange, err)}
	}
	if err != nil {
		return &os.LinkError{Op: "exchange", Old: a, New: b, Err: err}
	}
	return nil
}

// ErrNoExchange: the filesystem cannot swap two names in one step.
var ErrNoExchange = errors.New("the filesystem cannot exchange two names atomically")

// SyncDir makes the renames in dir durable (best effort: not every
// filesystem can sync a folder).
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// IsTemp reports whether name is a temporary of this package's form:
// "." + base + ".tmp-" + decimal digits (a file's, or a staged folder's).
func IsTemp(name string) bool { return isTemp(name) }
