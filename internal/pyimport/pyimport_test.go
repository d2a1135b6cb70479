package pyimport

import (
	"os"
	"path/filepath"
	"testing"
)

func TestModuleName(t *testing.T) {
	for file, want := range map[string]string{
		"x.py": "x", "x.pyc": "x", "x.so": "x", "x.pyd": "x", "x.abi3.so": "x",
		"x.cpython-313-x86_64-linux-gnu.so": "x", "__init__.abi3.so": "__init__",
		"x.py.orig": "", "x-y.py": "", "1x.py": "", "x.libs.so": "", "libfoo.so.1": "", "README.md": "", ".py": "",
	} {
		if got := ModuleName(file); got != want {
			t.Errorf("ModuleName(%q) = %q, want %q", file, got, want)
		}
	}
}

// TestLookupOrder: FileFinder's order — a regular package, then extension,
// source and byte-code modules, then a namespace folder.
func TestLookupOrder(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("m.pyc")
	mk("m.py")
	if got := Lookup(dir, "m"); len(got) != 2 || got[0].Path != filepath.Join(dir, "m.py") {
		t.Fatalf("source before byte code: %+v", got)
	}
	mk("m.abi3.so")
	if got := Lookup(dir, "m"); got[0].Path != filepath.Join(dir, "m.abi3.so") {
		t.Fatalf("extension first: %+v", got)
	}
	if err := os.Mkdir(filepath.Join(dir, "m"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := Lookup(dir, "m"); got[0].Kind != Module || got[len(got)-1].Kind != Namespace {
		t.Fatalf("a namespace folder comes last: %+v", got)
	}
	mk("m/__init__.pyc")
	if got := Lookup(dir, "m"); got[0].Kind != Package || got[0].Path != filepath.Join(dir, "m") {
		t.Fatalf("a package (any __init__ form) first: %+v", got)
	}
	if got := Lookup(dir, "other"); len(got) != 0 {
		t.Fatalf("nothing: %+v", got)
	}
}
