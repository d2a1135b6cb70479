package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README and docs/ describe today's product; how it came to be is in git
// log and the issues. developmentHistory matches the words of a development
// journal: a numbered stop, "this stop", "at stop", "mid-stop", a session of
// the work ("this session", "the previous session's machine").
var developmentHistory = regexp.MustCompile(`(?i)\bstops? \d|\b(this|that|at|since|over the|end of the|mid-?)\s?stop\b|\bstop's\b|\b(this|last|previous|next|another|earlier)\s+session\b|\bsession's\s+(cpu|machine|load|make test)`)

// docMaxLines caps the pages that grew as journals of measurements.
var docMaxLines = map[string]int{
	"docs/BENCHMARKS.md": 300,
	"docs/quantized.md":  350,
}

func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append(pages, filepath.Join(repoRoot, "README.md"))
}

func TestDocsNameNoDevelopmentHistory(t *testing.T) {
	for _, page := range docPages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, page)
		for i, line := range strings.Split(string(b), "\n") {
			if m := developmentHistory.FindString(line); m != "" {
				t.Errorf("%s:%d speaks of the development (%q): say what is true today; the history is in git log and the issues", rel, i+1, m)
			}
		}
	}
}

func TestDocsStayShort(t *testing.T) {
	for name, limit := range docMaxLines {
		if n := strings.Count(readDoc(t, name), "\n"); n > limit {
			t.Errorf("%s has %d lines, more than %d: keep today's facts, drop the successive measurements (git log has them)", name, n, limit)
		}
	}
}

func TestDevelopmentHistoryPattern(t *testing.T) {
	for _, s := range []string{"Measured at stop 12", "stops 34 and 35", "it was not run this stop", "at the end of stop 37", "mid-stop",
		"another session's `make test` ran beside it", "on the previous session's slower machine", "this session's slower CPU", "The next session measured"} {
		if !developmentHistory.MatchString(s) {
			t.Errorf("developmentHistory misses %q", s)
		}
	}
	for _, s := range []string{"the current stage stops (a `--scan` within a window)", "stop()", "warm sessions", "a worker session or a warm one lent",
		"the shared warm sessions", "each loan with its own time limit", "the session timed out", "the typed ops client over that session", "Stop the job"} {
		if developmentHistory.MatchString(s) {
			t.Errorf("developmentHistory matches %q, which is no history", s)
		}
	}
}
