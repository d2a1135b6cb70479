package orchestrator

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docs/ARCHITECTURE.md's picture of a run names its stages in the order
// runStages runs them: a stage added, renamed or moved redraws the picture.
func TestArchitecturePictureIsTheRunChain(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "## One run, end to end")
	end := strings.Index(doc[start+1:], "\n## ")
	if start < 0 || end < 0 {
		t.Fatal("docs/ARCHITECTURE.md has no section \"One run, end to end\"")
	}
	var drawn []string
	for _, m := range regexp.MustCompile(`[├└]─ ([a-z_]+(?:, [a-z_]+)*) `).FindAllStringSubmatch(doc[start:start+1+end], -1) {
		drawn = append(drawn, strings.Split(m[1], ", ")...)
	}
	var chain []string
	for _, s := range runStages {
		chain = append(chain, s.Name())
	}
	if !slices.Equal(drawn, chain) {
		t.Errorf("the picture draws the stages %v; runStages runs %v", drawn, chain)
	}
}
