package orchestrator

import (
	"path/filepath"
	"strings"
	"testing"

	"phase0/gate/baseline"
	"phase0/gate/config"
	"phase0/gate/weights"
	"phase0/internal/testenv"
	"phase0/output/report"
	"phase0/output/scaffold"
	"phase0/read/model"
)

// TestProgressEntryNamesOnlyWhatTheModuleDefines: a local checkpoint's
// progress entry points at default_checkpoint() only when the validated
// module defines one; upstream's hand-written modules do not.
func TestProgressEntryNamesOnlyWhatTheModuleDefines(t *testing.T) {
	dir := t.TempDir()
	upstreamStyle := filepath.Join(testenv.PyShim(), "tests", "data", "upstream", "qwen3_0_6b", "qwen3_0_6b_weights.py")
	ours := filepath.Join(dir, "ours_weights.py")
	testenv.WriteFile(t, ours, "import os\n\n\ndef default_checkpoint() -> str:\n    return os.getcwd()\n")
	nested := filepath.Join(dir, "nested_weights.py")
	testenv.WriteFile(t, nested, "class X:\n    def default_checkpoint(self):\n        pass\n")
	for _, tc := range []struct {
		module string
		want   bool
	}{{upstreamStyle, false}, {ours, true}, {nested, false}, {filepath.Join(dir, "absent_weights.py"), false}} {
		defines := scaffold.DefinesFunc(tc.module, "default_checkpoint")
		if defines != tc.want {
			t.Errorf("scaffold.DefinesFunc(%s) = %v, want %v", filepath.Base(tc.module), defines, tc.want)
		}
		r := &report.Report{Workspace: &report.Workspace{Name: "qwen3_0_6b", Mode: report.ModeValidatedExisting}}
		r.Gates = report.Gates{Weights: weights.NewResult(), ConfigConsistency: config.New(), HFBaseline: baseline.NewBaseline()}
		entry := report.ProgressEntry(r, &model.Config{}, scaffold.Spec{Name: "qwen3_0_6b", ModelID: "tiny-qwen3"}, dir, defines, DefaultModel)
		if !strings.Contains(entry, "- Local checkpoint: `tiny-qwen3`") || strings.Contains(entry, "default_checkpoint()") != tc.want {
			t.Errorf("%s: entry\n%s", filepath.Base(tc.module), entry)
		}
	}
}
