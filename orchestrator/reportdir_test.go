package orchestrator

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"phase0/verdict"
)

// A --report-dir holding a person's report.md or report.json: the run
// exits 2 naming the file, which stays as it was; a report dir phase0
// wrote before is written again.
func TestReportDirKeepsAPersonsReport(t *testing.T) {
	t.Parallel()
	model := tiny(t, "qwen2")
	for _, name := range []string{"report.md", "report.json"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			notes := filepath.Join(dir, name)
			writeFile(t, notes, "{\"my\": \"notes, kept by hand\"}\n")
			s := settingsFor(t, t.TempDir())
			s.ReportDir, s.ReferenceSteps = dir, 0
			r := Run(context.Background(), s, model, "test")
			if r.Status != verdict.Error || !strings.Contains(r.Error, notes+" exists and phase0 did not write it") || mustReadString(t, notes) != "{\"my\": \"notes, kept by hand\"}\n" {
				t.Errorf("%s, %q; want ERROR naming %s, kept as it was", r.Status, r.Error, notes)
			}
		})
	}
	dir := t.TempDir()
	s := settingsFor(t, t.TempDir())
	s.ReportDir, s.ReferenceSteps = dir, 0
	mustPass(t, Run(context.Background(), s, model, "test"))
	s.Fresh = true
	mustPass(t, Run(context.Background(), s, model, "test"))
}
