package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Comments and docs cite the docs/ page that states a fact; the
// specification the first sessions worked from is not in the repository,
// so a citation of it sends the reader nowhere. Every source, build and
// documentation file is read (test data and build outputs are not).
func TestNothingCitesTheMissingSpec(t *testing.T) {
	spec := regexp.MustCompile(`\b` + "SPE" + `C(\.md)?\b`) // spelled apart so this file does not match itself
	sources := map[string]bool{".go": true, ".py": true, ".pyi": true, ".c": true, ".h": true, ".cpp": true, ".tmpl": true,
		".sh": true, ".md": true, ".yaml": true, ".yml": true, ".toml": true, ".txt": true, ".mk": true}
	checked := 0
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != repoRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "dist" || name == "bin" || name == "workspace" || name == "__pycache__") {
				return filepath.SkipDir
			}
			return nil
		}
		if !sources[filepath.Ext(name)] && name != "Makefile" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for i, line := range strings.Split(string(b), "\n") {
			if spec.MatchString(line) {
				rel, _ := filepath.Rel(repoRoot, path)
				t.Errorf("%s:%d cites a specification that is not in the repository; cite the docs/ page that states the fact: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("read only %d files: the walk missed the sources", checked)
	}
}
