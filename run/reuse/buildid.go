package reuse

import (
	"debug/elf"
	"io"
	"phase0/read/fingerprint"
)

// maxBuildIDNote bounds the note read: Go's build ID note is ~100 bytes.
const maxBuildIDNote = 4 << 10

// StampExecutable identifies phase0's own binary by its Go build ID (the
// .note.go.buildid section, a hash of everything the binary was built from),
// not by its mtime: `make phase0` rebuilds bin/phase0 on every call, which
// rewrites an identical binary with a new mtime and would otherwise make
// every repeat run look changed. A binary without the note (not ELF, or a
// build that dropped it) is stamped by its metadata.
func StampExecutable(path string) fingerprint.File {
	f, err := elf.Open(path)
	if err != nil {
		return fingerprint.Stat(path, "phase0", -1)
	}
	defer f.Close()
	sec := f.Section(".note.go.buildid")
	if sec == nil || sec.Size == 0 || sec.Size > maxBuildIDNote {
		return fingerprint.Stat(path, "phase0", -1)
	}
	note, err := io.ReadAll(io.LimitReader(sec.Open(), maxBuildIDNote))
	if err != nil {
		return fingerprint.Stat(path, "phase0", -1)
	}
	return fingerprint.File{Name: "phase0", Size: int64(len(note)), SHA256: SHA256Hex(note)}
}
