// Package pyimport says, without starting Python, what Python's path-based
// finder (importlib's FileFinder) would import for a name in one folder:
// an extension module, a source or byte-code module, a regular package
// (a folder with an __init__ in any of those forms) or a namespace portion
// (a folder without one). Reuse (fingerprint) counts every such entry, and
// the llms tree check uses it to find a second `runners`.
package pyimport

import (
	"os"
	"path/filepath"
	"strings"
)

// Kind is what an entry of a folder is to the import system.
type Kind int

const (
	// None: the entry cannot be imported under any name.
	None Kind = iota
	// Module: an extension (.so, .cpython-*.so, .abi3.so, .pyd), source (.py)
	// or byte-code (.pyc) module.
	Module
	// Package: a folder holding __init__ in one of the module forms.
	Package
	// Namespace: a folder without __init__; it becomes a portion of a
	// namespace package when no folder on the path holds a module or a
	// regular package of that name.
	Namespace
)

func (k Kind) String() string {
	switch k {
	case Module:
		return "module"
	case Package:
		return "package"
	case Namespace:
		return "namespace folder"
	}
	return "not importable"
}

// ModuleName is the module an entry of a folder defines ("" when none),
// by its file name alone: "x.py", "x.pyc", "x.so", "x.pyd",
// "x.cpython-313-x86_64-linux-gnu.so", "x.abi3.so" all define x. A folder's
// name is checked by Entry.
func ModuleName(file string) string {
	for _, suffix := range []string{".py", ".pyc", ".pyd"} {
		if name, ok := strings.CutSuffix(file, suffix); ok {
			return identifier(name)
		}
	}
	name, ok := strings.CutSuffix(file, ".so")
	if !ok {
		return ""
	}
	// An extension's tag (".cpython-313-x86_64-linux-gnu", ".abi3") is what
	// follows the first dot; the module is what precedes it.
	if head, tag, found := strings.Cut(name, "."); found {
		if !strings.HasPrefix(tag, "cpython-") && tag != "abi3" {
			return ""
		}
		name = head
	}
	return identifier(name)
}

// identifier returns name when it can be a module name, else "".
func identifier(name string) string {
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return ""
	}
	for _, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r > 127) {
			return ""
		}
	}
	return name
}

// Entry classifies dir/name and returns the module name it offers.
func Entry(dir, name string, isDir bool) (string, Kind) {
	if !isDir {
		if m := ModuleName(name); m != "" {
			return m, Module
		}
		return "", None
	}
	if identifier(name) == "" || name == "__pycache__" {
		return "", None
	}
	if Init(filepath.Join(dir, name)) != "" {
		return name, Package
	}
	return name, Namespace
}

// Init returns the __init__ file that makes dir a regular package ("" when
// none): __init__.py first (the common case, one stat), else any other form.
func Init(dir string) string {
	if fi, err := os.Stat(filepath.Join(dir, "__init__.py")); err == nil && fi.Mode().IsRegular() {
		return filepath.Join(dir, "__init__.py")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if !e.IsDir() && ModuleName(e.Name()) == "__init__" {
			return filepath.Join(dir, e.Name())
		}
	}
	return ""
}

// Found is one entry of a folder that Python would consider for a name.
type Found struct {
	Path string
	Kind Kind
}

// Lookup returns what dir offers for the module name, in the order FileFinder
// tries them: a regular package, then modules (extensions, source, byte
// code), then a namespace portion. Empty when dir offers nothing (or is
// unreadable).
func Lookup(dir, name string) []Found {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var pkg, ns []Found
	var ext, src, byteCode []Found
	for _, e := range entries {
		isDir := e.IsDir()
		if e.Type()&os.ModeSymlink != 0 {
			fi, err := os.Stat(filepath.Join(dir, e.Name()))
			if err != nil {
				continue
			}
			isDir = fi.IsDir()
		}
		m, kind := Entry(dir, e.Name(), isDir)
		if m != name {
			continue
		}
		f := Found{Path: filepath.Join(dir, e.Name()), Kind: kind}
		switch {
		case kind == Package:
			pkg = append(pkg, f)
		case kind == Namespace:
			ns = append(ns, f)
		case strings.HasSuffix(e.Name(), ".py"):
			src = append(src, f)
		case strings.HasSuffix(e.Name(), ".pyc"):
			byteCode = append(byteCode, f)
		default:
			ext = append(ext, f)
		}
	}
	out := append(pkg, ext...)
	out = append(out, src...)
	out = append(out, byteCode...)
	return append(out, ns...)
}
