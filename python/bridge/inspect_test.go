package bridge

import (
	"debug/elf"
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzInspectAnswer feeds arbitrary interpreter output to the parser and the
// checks: an unknown program must get an error, never a panic, and anything
// accepted must be a supported CPython with a library to load.
func FuzzInspectAnswer(f *testing.F) {
	f.Add([]byte(infoMarker + `{"version": [3, 12, 1], "implementation": "cpython", "executable": "/v/bin/python", "prefix": "/v", "base_prefix": "/usr", "libdir": "/usr/lib", "ldlibrary": "libpython3.12.so", "instsoname": "libpython3.12.so.1.0", "multiarch": "x86_64-linux-gnu", "gil_disabled": 0, "trace_refs": null}` + "\n"))
	f.Add([]byte("site says hello\n" + infoMarker + `{"version": [2, 7, 18], "implementation": null}` + "\n"))
	f.Add([]byte(infoMarker + `{"version": [3, 13], "gil_disabled": "1"}`))
	f.Add([]byte("Python 2.7.18\n"))
	f.Add([]byte(infoMarker + "{not json"))
	f.Fuzz(func(t *testing.T, out []byte) {
		raw, err := parseInfo("/fuzz/python", out)
		if err != nil {
			if !errors.Is(err, ErrUnsupportedPython) {
				t.Fatalf("parse error %v does not wrap ErrUnsupportedPython", err)
			}
			return
		}
		p, err := checkInfo("/fuzz/python", raw)
		if err != nil {
			return
		}
		if p.Major != 3 || p.Minor < minMinor || p.Minor > maxMinor || p.Library == "" || p.Program == "" {
			t.Fatalf("accepted %+v from %q", p, out)
		}
	})
}

// TestNoLibpythonLinked checks this test binary, which contains the bridge:
// libpython must come from dlopen at run time, never from the link.
func TestNoLibpythonLinked(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range libs {
		if strings.Contains(lib, "python") {
			t.Errorf("%s is linked against %s (all: %v)", exe, lib, libs)
		}
	}
	if len(libs) == 0 {
		t.Errorf("%s imports no shared library; want at least libc (cgo)", exe)
	}
}
