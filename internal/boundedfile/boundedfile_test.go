package boundedfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	if err := os.WriteFile(small, []byte(`{"a": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, 65), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       error  // nil: read succeeds
		says       string // in the message
	}{
		{"small file", small, nil, ""},
		{"exactly the limit", big, nil, ""},
		{"directory", dir, ErrNotRegular, "a directory"},
		{"named pipe (must not block)", fifo, ErrNotRegular, "a named pipe"},
		{"/dev/zero behind a symlink", zero, ErrNotRegular, "a device"},
		{"missing", filepath.Join(dir, "none"), os.ErrNotExist, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			var data []byte
			var err error
			go func() { data, err = Read(tc.path, 65); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Read blocked")
			}
			if tc.want == nil {
				if err != nil || len(data) == 0 {
					t.Fatalf("Read = %d bytes, %v", len(data), err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Read error = %v, want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
	if _, err := Read(big, 64); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "larger than 64 bytes (65)") {
		t.Fatalf("over the limit: %v", err)
	}
}
