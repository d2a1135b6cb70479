// Package boundedfile reads the small files phase0 is handed or keeps
// (settings, records, manifests, cached metadata) with the two guarantees
// every such read needs: only a regular file, and never more than a limit.
package boundedfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

var (
	// ErrNotRegular is wrapped when the path is a directory, a named pipe, a
	// device or a socket.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge is wrapped when the file holds more than the limit.
	ErrTooLarge = errors.New("file too large")
)

// Read returns the content of path, a regular file of at most limit bytes.
// It opens without blocking (a named pipe would otherwise wait for a writer
// forever), checks the open file, and reads at most limit+1 bytes, so a file
// that grows after the check (/dev/zero behind a symlink, a log being
// written) cannot make it allocate more.
func Read(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %w (%s)", path, ErrNotRegular, Kind(fi.Mode()))
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes (%d): %w", path, limit, fi.Size(), ErrTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s grew past the %d bytes allowed while it was read: %w", path, limit, ErrTooLarge)
	}
	return data, nil
}

// Kind is what a file that is not a regular file is, in words: "a
// directory", "a symlink", "a named pipe", "a socket", "a device" (never
// os.FileMode's "L---------").
func Kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeSymlink != 0:
		return "a symlink"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&(os.ModeDevice|os.ModeCharDevice) != 0:
		return "a device"
	case m.IsRegular():
		return "a regular file"
	}
	return "a special file"
}
