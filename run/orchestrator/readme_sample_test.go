package orchestrator

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// README's sample run shows the stages a run of the default model goes
// through, in their order: the stage lines of `phase0 run default` (a real
// run pasted; issue 49 found a stage set three releases old).
func TestReadmeSampleRunHasTodaysStages(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "```\n$ make phase0\n")
	end := strings.Index(text[start+4:], "```")
	if start < 0 || end < 0 {
		t.Fatal("README has no sample run (```\\n$ make phase0)")
	}
	line := regexp.MustCompile(`(?m)^phase0: ([a-z_0-9]+) +(PASS|FAIL|WARN|SKIPPED|ERROR) `)
	var shown []string
	for _, m := range line.FindAllStringSubmatch(text[start:start+4+end], -1) {
		shown = append(shown, m[1])
	}
	// enter (a tree's lock) and scan (--scan) print no line on a run of
	// the default model without a tree or --scan.
	silent := []string{"enter", "scan"}
	var want []string
	for _, sg := range runStages {
		if !slices.Contains(silent, sg.Name()) {
			want = append(want, sg.Name())
		}
	}
	if !slices.Equal(shown, want) {
		t.Errorf("README's sample shows the stages %v; a run of the default model prints %v", shown, want)
	}
}
