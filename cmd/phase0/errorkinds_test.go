package main

import (
	"regexp"
	"slices"
	"testing"

	"phase0/output/report"
)

// docs/reports.md's table of error kinds is the closed set report.ErrorKinds
// declares, in its order: a kind added in Go and not documented (or the
// reverse) fails here, and the Python API's mapping is tested against the
// same table (cmd/pyext/tests/test_errors.py).
func TestReportsDocumentEveryErrorKind(t *testing.T) {
	table := section(t, readDoc(t, "docs/reports.md"), "Error kinds")
	var documented []report.ErrorKind
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(table, -1) {
		documented = append(documented, report.ErrorKind(m[1]))
	}
	if !slices.Equal(documented, report.ErrorKinds) {
		t.Errorf("docs/reports.md's error kinds are\n  %v\nreport.ErrorKinds are\n  %v", documented, report.ErrorKinds)
	}
}
