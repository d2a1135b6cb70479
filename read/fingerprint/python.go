package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"phase0/internal/pyimport"
	"phase0/wire"
)

// Sources is the Python code a run executed and what steered it, stamped:
//   - Files: every module file it imported from outside the standard
//     library (the runner and whatever it imports, helpers anywhere, the
//     workspace modules, sitecustomize, the installed packages);
//   - Modules: the import map, module name → file, to name which import a
//     changed folder may now resolve elsewhere;
//   - Dirs: every folder a submodule was looked up in (a package's
//     __path__), by its metadata: adding, removing or renaming an entry
//     moves its mtime and ctime, which is what importlib's own FileFinder
//     cache trusts; a package folder dropped beside an imported module
//     (transformers/models/qwen3/modeling_qwen3/__init__.py) is seen so;
//   - Listings: each sys.path folder's importable names (modules in every
//     form, regular packages, and namespace folders of the names the run
//     imported), so a module that would shadow or newly satisfy an import
//     (a sitecustomize.py dropped into site-packages, a runners/ package
//     at the llms tree's root) is seen without starting Python, while a
//     model folder appearing in an llms tree is not a change;
//   - Pth: the .pth files of the site folders;
//   - Env: the environment variables that reach the verdict (EnvRules);
//   - CPU: the processor flags that pick torch's kernels.
type Sources struct {
	Files    []File            `json:"files"`
	Modules  map[string]string `json:"modules"`
	Dirs     []File            `json:"dirs"`
	Names    []string          `json:"names"`
	Listings []File            `json:"listings"`
	Pth      []File            `json:"pth"`
	Env      []string          `json:"env"`
	CPU      CPU               `json:"cpu"`
}

// StampSources stamps what a worker reported. Module files outside the
// site folders (the user's code) are hashed by content; installed packages,
// thousands of files, by metadata (ctime still moves on any rewrite).
func StampSources(im wire.Imports) Sources {
	s := Sources{Modules: map[string]string{}}
	outside := func(p string) bool { return !under(p, im.Stdlib) || under(p, im.SiteDirs) }
	var files, dirs []string
	search := map[string][]string{}
	names := map[string]bool{}
	for _, m := range im.Modules {
		search[m.Name] = m.Search
		top, _, _ := strings.Cut(m.Name, ".")
		names[top] = true
	}
	for _, m := range im.Modules {
		file := ""
		if m.File != "" && filepath.IsAbs(m.File) {
			file = filepath.Clean(m.File)
		}
		switch {
		case file != "" && outside(file):
			files = append(files, file)
		case file == "" && slices.ContainsFunc(m.Search, func(d string) bool { return filepath.IsAbs(d) && outside(d) }):
			// a namespace package outside the standard library
		default:
			continue
		}
		s.Modules[m.Name] = file
		if i := strings.LastIndexByte(m.Name, '.'); i > 0 {
			for _, d := range search[m.Name[:i]] {
				if filepath.IsAbs(d) && outside(d) {
					dirs = append(dirs, filepath.Clean(d))
				}
			}
		}
	}
	s.Files = Files(files, func(p string) int64 {
		if under(p, im.SiteDirs) {
			return -1
		}
		return DefaultHashUpTo
	})
	s.Dirs = Files(dirs, func(string) int64 { return -1 })
	s.Names = slices.Sorted(maps.Keys(names))
	roots := slices.Clone(im.SysPath)
	roots = append(roots, im.SiteDirs...)
	slices.Sort(roots)
	for _, d := range slices.Compact(roots) {
		if d == "" || !filepath.IsAbs(d) {
			continue // "" is the working folder, which the worker does not import from
		}
		s.Listings = append(s.Listings, Listing(d, s.Names))
	}
	var pth []string
	for _, d := range im.SiteDirs {
		found, _ := filepath.Glob(filepath.Join(d, "*.pth"))
		pth = append(pth, found...)
	}
	s.Pth = Files(pth, func(string) int64 { return DefaultHashUpTo })
	s.Env = Env()
	s.CPU = ReadCPU()
	return s
}

// Restamp stamps the same files and folders again, now (for comparing a
// recorded Sources with the present without starting Python).
func (s Sources) Restamp() Sources {
	out := Sources{Files: restamp(s.Files), Modules: s.Modules, Dirs: restamp(s.Dirs), Names: s.Names, Pth: restamp(s.Pth), Env: Env(), CPU: ReadCPU()}
	for _, l := range s.Listings {
		out.Listings = append(out.Listings, Listing(l.Name, s.Names))
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
	if old.Modules == nil {
		return "the recorded Python sources have no import map (recorded by an older phase0)"
	}
	if why := Change("python source", old.Files, cur.Files); why != "" {
		return why
	}
	if name, why := diff("import folder", old.Dirs, cur.Dirs); why != "" {
		return why + " (an entry was added, removed or renamed there" + shadowed(name, old.Modules) + ")"
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
	return cpuChange(old.CPU, cur.CPU)
}

// shadowed compares the import map with what dir now offers: for a module
// imported from dir that Python would now find elsewhere in it (a package
// beside a module, an extension beside a source), it names both.
func shadowed(dir string, modules map[string]string) string {
	for _, name := range slices.Sorted(maps.Keys(modules)) {
		file := modules[name]
		i := strings.LastIndexByte(name, '.')
		if file == "" || i < 0 {
			continue
		}
		was := file
		if pyimport.ModuleName(filepath.Base(file)) == "__init__" {
			was = filepath.Dir(file)
		}
		if filepath.Dir(was) != dir {
			continue
		}
		found := pyimport.Lookup(dir, name[i+1:])
		if len(found) > 0 && found[0].Path != was {
			return fmt.Sprintf(": %s would now import the %s %s, not %s", name, found[0].Kind, found[0].Path, file)
		}
	}
	return ""
}

// Listing stamps a folder by the names it offers to `import`: modules in
// every form (.py, .pyc, extension modules), .pth files, regular packages
// (a sub-folder with an __init__ in any of those forms), and namespace
// folders named in names (the top-level names the run imported). Name is
// the folder; SHA256 hashes the entries and their kind. A folder of data,
// or a model folder appearing in an llms tree, leaves it unchanged; a
// sitecustomize.py dropped in, or a runners/ package, changes it.
func Listing(dir string, names []string) File {
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
		if strings.HasSuffix(name, ".pth") {
			fmt.Fprintf(h, "%s\tpth\n", name)
			continue
		}
		isDir := e.IsDir()
		if e.Type()&os.ModeSymlink != 0 {
			if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
				isDir = fi.IsDir()
			}
		}
		module, kind := pyimport.Entry(dir, name, isDir)
		if kind == pyimport.None || kind == pyimport.Namespace && !slices.Contains(names, module) {
			continue
		}
		fmt.Fprintf(h, "%s\t%s\n", name, kind)
	}
	f.SHA256 = hex.EncodeToString(h.Sum(nil))
	return f
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
