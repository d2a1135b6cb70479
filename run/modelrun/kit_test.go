package modelrun

import (
	"path/filepath"
	"testing"

	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/output/report"
	"phase0/python/warm"
	"phase0/run/orchestrator"
	"phase0/run/quantkey/quanttest"
)

const (
	bundleID   = quanttest.BundleID
	llamaBase  = quanttest.LlamaBase
	llamaInstr = quanttest.LlamaInstr
	q4nxFolder = quanttest.Q4nxFolder
)

// testSessions lends the tests' runs warm Python sessions.
var testSessions = warm.New(2, 0)

func TestMain(m *testing.M) { quanttest.Main(m, testSessions) }

var (
	quantTree      = quanttest.Tree
	fastflowlmRepo = quanttest.Repo
	mustReadString = quanttest.ReadString
)

func settingsFor(t *testing.T, llms string) *orchestrator.Settings {
	return quanttest.Settings(t, llms, testSessions)
}

func tiny(t *testing.T, name string) string { return filepath.Join(testenv.TinyModels(t), name) }

func stageDetail(r *report.Report, name string) string {
	for _, s := range r.Stages {
		if s.Name == name {
			return string(s.Status) + ": " + s.Detail
		}
	}
	return ""
}

func mustPass(t *testing.T, r *report.Report) {
	t.Helper()
	if r.Status != verdict.Pass {
		b, _ := r.JSON()
		t.Fatalf("status %s, want PASS:\n%s", r.Status, b)
	}
}
