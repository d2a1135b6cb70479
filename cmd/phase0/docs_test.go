package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README and docs/ describe the code; these tests keep them from
// drifting: every package folder is in docs/DEVELOPING.md's Layout, every
// fuzz target in its Fuzzing section, and every package in the
// architecture's concept table or its text; the README stays short and every
// link between the pages resolves.

const repoRoot = "../.."

// packageDirs are the folders holding Go packages, relative to the repo root
// (internal/ ones as internal/<name>; commands under cmd/ as cmd/<name>).
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != repoRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "dist" || name == "workspace" || name == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(repoRoot, filepath.Dir(path))
		if err != nil {
			return err
		}
		if len(dirs) == 0 || dirs[len(dirs)-1] != rel {
			dirs = append(dirs, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section is the text of a Markdown section, from its heading to the next
// heading of the same or a higher level.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(doc))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var out bytes.Buffer
	level, in := 0, false
	for sc.Scan() {
		line := sc.Text()
		hashes := len(line) - len(strings.TrimLeft(line, "#"))
		isHeading := hashes > 0 && strings.HasPrefix(line[hashes:], " ")
		if in && isHeading && hashes <= level {
			break
		}
		if !in && isHeading && strings.TrimSpace(line[hashes:]) == heading {
			in, level = true, hashes
		}
		if in {
			out.WriteString(line + "\n")
		}
	}
	if !in {
		t.Fatalf("no section %q", heading)
	}
	return out.String()
}

// DEVELOPING's Layout names every floor's root directory (the packages
// themselves are ARCHITECTURE's generated list).
func TestDevelopingLayoutNamesEveryFloor(t *testing.T) {
	layout := section(t, readDoc(t, "docs/DEVELOPING.md"), "Layout")
	for _, f := range floors {
		for _, dir := range f.dirs {
			if !strings.Contains(layout, "`"+dir+"/`") {
				t.Errorf("docs/DEVELOPING.md's Layout does not name `%s/`", dir)
			}
		}
	}
}

func TestDevelopingNamesEveryFuzzTarget(t *testing.T) {
	readme := section(t, readDoc(t, "docs/DEVELOPING.md"), "Fuzzing")
	fuzz := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	for _, dir := range packageDirs(t) {
		tests, _ := filepath.Glob(filepath.Join(repoRoot, dir, "*_test.go"))
		for _, f := range tests {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range fuzz.FindAllSubmatch(b, -1) {
				if !strings.Contains(readme, "`"+string(m[1])+"`") {
					t.Errorf("docs/DEVELOPING.md's Fuzzing does not name the fuzz target %s (%s)", m[1], dir)
				}
			}
		}
	}
}

func TestArchitectureNamesEveryPackage(t *testing.T) {
	arch := readDoc(t, "docs/ARCHITECTURE.md")
	for _, dir := range packageDirs(t) {
		if strings.HasPrefix(dir, "cmd/") || strings.HasPrefix(dir, "npu/cmd/") {
			continue
		}
		if !strings.Contains(arch, "`"+dir+"/") && !strings.Contains(arch, "`"+dir+"`") {
			t.Errorf("docs/ARCHITECTURE.md does not name %s/", dir)
		}
	}
}
