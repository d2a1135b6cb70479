package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"phase0/internal/testenv"
	"strings"
	"testing"

	"phase0/gate/verdict"
)

// A --report-dir holding a person's report.md, report.json, top10.png or
// inputs.json: the run exits 2 naming the file, which stays as it was; a
// report dir phase0 wrote before is written again.
func TestReportDirKeepsAPersonsReport(t *testing.T) {
	t.Parallel()
	model := tiny(t, "qwen2")
	for _, name := range []string{"report.md", "report.json", "top10.png", "inputs.json"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			notes := filepath.Join(dir, name)
			testenv.WriteFile(t, notes, "{\"my\": \"notes, kept by hand\"}\n")
			s := settingsFor(t, t.TempDir())
			s.ReportDir, s.ReferenceSteps = dir, 0
			r := RunBF16(context.Background(), s, model, "test")
			if r.Status != verdict.Error || !strings.Contains(r.Error, notes+" exists and phase0 did not write it") || mustReadString(t, notes) != "{\"my\": \"notes, kept by hand\"}\n" {
				t.Errorf("%s, %q; want ERROR naming %s, kept as it was", r.Status, r.Error, notes)
			}
		})
	}
	dir := t.TempDir()
	s := settingsFor(t, t.TempDir())
	s.ReportDir, s.ReferenceSteps = dir, 0
	mustPass(t, RunBF16(context.Background(), s, model, "test"))
	s.Fresh = true
	mustPass(t, RunBF16(context.Background(), s, model, "test"))
}

// A workspace (--out-dir) or a report dir inside the model folder is
// refused before anything is written: its files would change the
// checkpoint phase0 validates, and no later run could reuse the PASS.
func TestNothingWrittenIntoTheModelFolder(t *testing.T) {
	t.Parallel()
	model := t.TempDir()
	if err := os.CopyFS(model, os.DirFS(tiny(t, "qwen2"))); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(model)
	for _, tc := range []struct{ out, reports string }{{model, ""}, {t.TempDir(), filepath.Join(model, "reports")}} {
		s := settingsFor(t, tc.out)
		s.ReportDir, s.ReferenceSteps = tc.reports, 0
		r := RunBF16(context.Background(), s, model, "test")
		after, _ := os.ReadDir(model)
		if r.Status != verdict.Error || !strings.Contains(r.Error, "is inside the model folder "+model) || len(after) != len(before) {
			t.Errorf("--out-dir %s --report-dir %q: %s, %q, %d entries in the model folder (was %d); want ERROR and nothing written", tc.out, tc.reports, r.Status, r.Error, len(after), len(before))
		}
	}
}
