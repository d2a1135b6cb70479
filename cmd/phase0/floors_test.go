package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// floors are the root's package directories, lowest first: a package
// imports packages on its own floor or below. This is the one declaration
// of the house's floors; docs/ARCHITECTURE.md's package list is generated
// from it and from go list.
var floors = []struct {
	dirs []string
	what string
}{
	{[]string{"internal"}, "leaf utilities and test kits: no phase0 concepts"},
	{[]string{"read", "npu", "wire"}, "formats and readers: what phase0 is handed (checkpoints, config.json, the HF cache, the hub, the llms tree, model lists, fingerprints), the machine's NPUs, and the worker's op contract (every struct that crosses the Python boundary)"},
	{[]string{"gate"}, "the gates: each judges facts into a verdict section (gate 1 `weights`, gate 2 `baseline`, gate 3 `config`, the quantized gates `quant`), the reference and the machine"},
	{[]string{"python"}, "the Python side: the embedded interpreter, the worker child, the typed op boundary, warm sessions and the shim itself"},
	{[]string{"output"}, "what phase0 writes: the generated workspace, the report and its renderings, the record"},
	{[]string{"run"}, "the engine: settings, the stage chain, list runs, resolving MODEL, reuse, where a workspace goes"},
	{[]string{"cmd"}, "the binaries and the command line (and `import phase0`)"},
}

// maxUpward is how many imports may run from a floor to a higher one (a
// test kit that needs a reader, say); each is listed by the test.
const maxUpward = 1

func floorOf(t *testing.T, pkg string) int {
	t.Helper()
	root, _, _ := strings.Cut(strings.TrimPrefix(pkg, "phase0/"), "/")
	for i, f := range floors {
		if slices.Contains(f.dirs, root) {
			return i
		}
	}
	t.Fatalf("%s: its root directory %s/ is on no floor: add it to floors in cmd/phase0/floors_test.go", pkg, root)
	return -1
}

type goPackage struct {
	path, doc string
	imports   []string
}

func goList(t *testing.T) []goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags", "pyext", "-f", "{{.ImportPath}}\t{{.Doc}}\t{{join .Imports \" \"}}", "./...")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []goPackage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 {
			t.Fatalf("go list printed %q", line)
		}
		pkgs = append(pkgs, goPackage{f[0], f[1], strings.Fields(f[2])})
	}
	return pkgs
}

func TestRootHoldsFewPackageDirectories(t *testing.T) {
	roots := map[string]bool{}
	for _, dir := range packageDirs(t) {
		root, _, _ := strings.Cut(dir, string(filepath.Separator))
		roots[root] = true
		floorOf(t, "phase0/"+dir)
	}
	if len(roots) > 15 {
		t.Errorf("%d root package directories, at most 15: %v", len(roots), roots)
	}
}

func TestImportsRunDownTheFloors(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs go list")
	}
	var upward []string
	for _, p := range goList(t) {
		for _, imp := range p.imports {
			if strings.HasPrefix(imp, "phase0/") && floorOf(t, imp) > floorOf(t, p.path) {
				upward = append(upward, p.path+" → "+imp)
			}
		}
	}
	t.Logf("imports running up a floor: %v", upward)
	if len(upward) > maxUpward {
		t.Errorf("%d imports run up a floor, at most %d: %v", len(upward), maxUpward, upward)
	}
}

var updateDocs = flag.Bool("update", false, "rewrite docs/ARCHITECTURE.md's generated package list")

const (
	packagesBegin = "<!-- packages: generated from go list and each package's doc by go test ./cmd/phase0 -run Architecture -update -->\n"
	packagesEnd   = "<!-- end of the packages -->\n"
)

// packageList renders the floors, highest first, and each floor's packages
// with the first sentence of their doc comment.
func packageList(t *testing.T) string {
	pkgs := goList(t)
	var b strings.Builder
	for i := len(floors) - 1; i >= 0; i-- {
		f := floors[i]
		dirs := make([]string, len(f.dirs))
		for j, d := range f.dirs {
			dirs[j] = "`" + d + "/`"
		}
		fmt.Fprintf(&b, "\n**Floor %d: %s**, %s.\n\n", i, strings.Join(dirs, ", "), f.what)
		for _, p := range pkgs {
			if floorOf(t, p.path) != i {
				continue
			}
			if p.doc == "" {
				t.Errorf("%s has no package doc comment", p.path)
			}
			fmt.Fprintf(&b, "- `%s`: %s\n", strings.TrimPrefix(p.path, "phase0/"), p.doc)
		}
	}
	return b.String() + "\n"
}

func TestArchitecturePackageListIsGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs go list")
	}
	path := filepath.Join(repoRoot, "docs", "ARCHITECTURE.md")
	doc := readDoc(t, "docs/ARCHITECTURE.md")
	i, j := strings.Index(doc, packagesBegin), strings.Index(doc, packagesEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/ARCHITECTURE.md has no %q … %q", packagesBegin, packagesEnd)
	}
	want := packageList(t)
	if *updateDocs {
		doc = doc[:i+len(packagesBegin)] + want + doc[j:]
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := doc[i+len(packagesBegin) : j]; got != want {
		t.Errorf("docs/ARCHITECTURE.md's package list is not go list's: run go test ./cmd/phase0 -run Architecture -update")
	}
}

// docPath is a repository path a page names: a floor's directory and what
// follows it, or a bare package directory name followed by a slash.
var docPath = regexp.MustCompile(`(?:^|[\s` + "`" + `(\[|])([a-z][a-z0-9_]*)/([A-Za-z0-9_./<>*-]*)`)

// The docs name the code where it is: a path under a floor exists, and no
// page names a package by its directory alone as if it sat at the root
// (the layout before the floors: "quant/", "orchestrator/").
func TestDocsNameExistingPaths(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(repoRoot, "README.md"))
	onFloor := map[string]bool{}
	nested := map[string]string{} // a package directory's name → its path
	for _, f := range floors {
		for _, d := range f.dirs {
			onFloor[d] = true
		}
	}
	for _, dir := range packageDirs(t) {
		base := filepath.Base(dir)
		if dir != base {
			nested[base] = dir
		}
	}
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, page)
		fenced := false
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "```") {
				fenced = !fenced
			}
			for _, m := range docPath.FindAllStringSubmatch(line, -1) {
				first, rest := m[1], strings.TrimRight(m[2], ".")
				quoted := fenced || strings.HasPrefix(strings.TrimLeft(m[0], " \t([|]"), "`")
				switch {
				case onFloor[first] && quoted:
					p := first + "/" + rest
					if strings.ContainsAny(p, "<>*") {
						p = p[:strings.IndexAny(p, "<>*")]
					}
					if _, err := os.Stat(filepath.Join(repoRoot, p)); err != nil {
						t.Errorf("%s names %s, which does not exist", rel, first+"/"+rest)
					}
				case nested[first] != "" && rest != "":
					// Stale when the path exists under the package's floor
					// ("quant/judge.go" for gate/quant/judge.go).
					if _, err := os.Stat(filepath.Join(repoRoot, nested[first], rest)); err == nil {
						t.Errorf("%s names %s/%s: the package is %s/", rel, first, rest, nested[first])
					}
				}
			}
		}
	}
}
