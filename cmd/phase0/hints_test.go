package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHintsNameTheHFCLI: huggingface_hub ≥ 1.0 ships only the `hf` CLI, so
// no hint phase0 prints or documents may tell a user to run
// huggingface-cli: the Go sources, the shim's Python, the templates and the
// docs are read (tests, which may assert its absence, are not).
func TestHintsNameTheHFCLI(t *testing.T) {
	const old = "huggingface-cli"
	var read int
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, p)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" || d.Name() == "tests" || d.Name() == "bin" {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		switch {
		case strings.HasSuffix(name, "_test.go"):
			return nil
		case strings.HasSuffix(name, ".go"), strings.HasSuffix(name, ".py"), strings.HasSuffix(name, ".tmpl"),
			strings.HasSuffix(name, ".md"), strings.HasSuffix(name, ".yaml"), name == "Makefile":
		default:
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		read++
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, old) {
				t.Errorf("%s:%d names %s, which huggingface_hub ≥ 1.0 no longer ships: say `hf download …` or `hf auth login`", rel, i+1, old)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if read < 50 {
		t.Fatalf("only %d files read under %s", read, repoRoot)
	}
}
