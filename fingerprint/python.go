package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Imports is what the Python worker reports about itself after a run: the
// file of every module it imported, its sys.path, where its standard
// library lives and its site-packages folders. Python reports; Go stamps.
type Imports struct {
	Files    []string `json:"files"`
	SysPath  []string `json:"sys_path"`
	Stdlib   []string `json:"stdlib"`
	SiteDirs []string `json:"site_dirs"`
}

// Sources is the Python code a run executed, stamped: every module file it
// imported from outside the standard library (the runner and whatever it
// imports, helpers anywhere, the workspace modules, sitecustomize, the
// installed packages), each sys.path folder's importable names (so a new
// module that would shadow or newly satisfy an import — a sitecustomize.py
// dropped into site-packages — is seen without starting Python), the .pth
// files of the site folders, and the environment variables that steer
// Python and torch.
type Sources struct {
	Files    []File   `json:"files"`
	Listings []File   `json:"listings"`
	Pth      []File   `json:"pth"`
	Env      []string `json:"env"`
}

// envPrefixes are the environment variables a worker inherits that can
// change what Python imports or what torch computes.
var envPrefixes = []string{"PYTHON", "LD_PRELOAD", "LD_LIBRARY_PATH", "TORCH", "TRANSFORMERS_", "HF_", "OMP_", "MKL_", "KMP_", "OPENBLAS_", "ATEN_", "CUDA_"}

// StampSources stamps what a worker reported. Module files outside the
// site folders (the user's code) are hashed by content; installed packages,
// thousands of files, by metadata (ctime still moves on any rewrite).
func StampSources(im Imports) Sources {
	var files []string
	for _, f := range im.Files {
		if f == "" || !filepath.IsAbs(f) {
			continue
		}
		if under(f, im.Stdlib) && !under(f, im.SiteDirs) {
			continue
		}
		files = append(files, filepath.Clean(f))
	}
	s := Sources{Files: Files(files, func(p string) int64 {
		if under(p, im.SiteDirs) {
			return -1
		}
		return DefaultHashUpTo
	})}
	dirs := slices.Clone(im.SysPath)
	dirs = append(dirs, im.SiteDirs...)
	slices.Sort(dirs)
	for _, d := range slices.Compact(dirs) {
		if d == "" || !filepath.IsAbs(d) {
			continue // "" is the working folder, which the worker does not import from
		}
		s.Listings = append(s.Listings, Listing(d))
	}
	var pth []string
	for _, d := range im.SiteDirs {
		found, _ := filepath.Glob(filepath.Join(d, "*.pth"))
		pth = append(pth, found...)
	}
	s.Pth = Files(pth, func(string) int64 { return DefaultHashUpTo })
	s.Env = Env()
	return s
}

// Restamp stamps the same files and folders again, now (for comparing a
// recorded Sources with the present without starting Python).
func (s Sources) Restamp() Sources {
	out := Sources{Files: restamp(s.Files), Pth: restamp(s.Pth), Env: Env()}
	for _, l := range s.Listings {
		out.Listings = append(out.Listings, Listing(l.Name))
	}
	return out
}

func restamp(files []File) []File {
	out := make([]File, 0, len(files))
	for _, f := range files {
		limit := int64(-1)
		if f.SHA256 != "" || f.Absent {
			limit = DefaultHashUpTo
		}
		out = append(out, Stat(f.Name, f.Name, limit))
	}
	return out
}

// SourcesChange names the first difference between two Sources, or "".
func SourcesChange(old, cur Sources) string {
	if why := Change("python source", old.Files, cur.Files); why != "" {
		return why
	}
	if why := Change("import folder", old.Listings, cur.Listings); why != "" {
		return why + " (a module was added, removed or renamed there)"
	}
	if why := Change(".pth file", old.Pth, cur.Pth); why != "" {
		return why
	}
	if !slices.Equal(old.Env, cur.Env) {
		for _, e := range cur.Env {
			if !slices.Contains(old.Env, e) {
				return "environment variable " + strings.SplitN(e, "=", 2)[0] + " changed"
			}
		}
		for _, e := range old.Env {
			if !slices.Contains(cur.Env, e) {
				return "environment variable " + strings.SplitN(e, "=", 2)[0] + " was unset"
			}
		}
	}
	return ""
}

// Env is the sorted NAME=value list of the environment variables that steer
// Python and torch (see envPrefixes).
func Env() []string {
	out := []string{}
	for _, kv := range os.Environ() {
		for _, p := range envPrefixes {
			if strings.HasPrefix(kv, p) {
				out = append(out, kv)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// Listing stamps a folder by the names it offers to `import`: modules
// (.py, .pyc, extension modules), .pth files, and packages (sub-folders
// holding __init__.py). Name is the folder; SHA256 hashes the names. A
// folder of data, or a model folder appearing in an llms tree, leaves it
// unchanged; a sitecustomize.py dropped in changes it.
func Listing(dir string) File {
	f := File{Name: dir}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			f.Absent = true
		} else if fi, statErr := os.Stat(dir); statErr == nil && !fi.IsDir() {
			f.SHA256 = "not a folder" // a zip on sys.path: stamped by Files when imported from
		} else {
			f.Err = err.Error()
		}
		return f
	}
	if len(entries) > MaxFiles {
		f.Err = fmt.Sprintf("%d entries, more than %d", len(entries), MaxFiles)
		return f
	}
	h := sha256.New()
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == "__pycache__":
			continue
		case strings.HasSuffix(name, ".py"), strings.HasSuffix(name, ".pyc"), strings.HasSuffix(name, ".so"),
			strings.HasSuffix(name, ".pth"), strings.HasSuffix(name, ".pyd"):
		case isPackage(filepath.Join(dir, name)):
		default:
			continue
		}
		fmt.Fprintf(h, "%s\n", name)
	}
	f.SHA256 = hex.EncodeToString(h.Sum(nil))
	return f
}

func isPackage(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "__init__.py"))
	return err == nil && fi.Mode().IsRegular()
}

// under says whether path lies inside one of dirs.
func under(path string, dirs []string) bool {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if rel, err := filepath.Rel(d, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && rel != "." {
			return true
		}
	}
	return false
}
