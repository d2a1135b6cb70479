package orchestrator

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"phase0/internal/testenv"
)

// TestMissingDependencyIsCouldNotEvaluate: a real second venv with NumPy
// only (make's venv-min-*) is no verdict on the model: exit 2 naming the
// missing module and how to install it, and the PASS recorded before with
// the full venv stays byte for byte, inputs.json included.
func TestMissingDependencyIsCouldNotEvaluate(t *testing.T) {
	t.Parallel() // independent of the other tests; overlaps their waits (make test runs -parallel 3)
	pys := testenv.Pythons(t)
	if len(pys) < 2 {
		t.Skipf("SKIPPED, NOT TESTED: no second Python environment (a NumPy-only venv: set %s, or run through make, which builds ~/.cache/phase0/venv-min-*)", "PHASE0_TEST_PYTHONS")
	}
	out := t.TempDir()
	s := settingsFor(t, out)
	s.Name, s.ReferenceSteps = "deps", 0
	model := tiny(t, "qwen3")
	mustPass(t, RunBF16(context.Background(), s, model, "test"))
	ws := filepath.Join(out, "deps")
	before := recordFiles(t, ws)

	bare := settingsFor(t, out)
	bare.Name, bare.ReferenceSteps, bare.Python = "deps", 0, pys[1]
	r := RunBF16(context.Background(), isolated(bare), model, "test")
	if ExitCode(r) != 2 || !strings.Contains(r.Error, "pip install") ||
		!strings.Contains(r.Error, "ml_dtypes") && !strings.Contains(r.Error, "torch") {
		t.Fatalf("%s: exit %d (%s), error %q; want 2 naming the missing module and the install command", pys[1], ExitCode(r), r.Status, r.Error)
	}
	for rel, b := range recordFiles(t, ws) {
		if b != before[rel] {
			t.Errorf("%s changed: the PASS recorded with the full environment must stay as it was", rel)
		}
	}
}
