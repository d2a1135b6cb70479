package orchestrator

import (
	"os"
	"path/filepath"

	"context"
	"strings"
	"testing"

	"phase0/gate/preflight"
	"phase0/gate/verdict"
	"phase0/internal/sttest"
	"phase0/read/safetensors"
)

func TestMemoryPreflight(t *testing.T) {
	orig := memAvailable
	t.Cleanup(func() { memAvailable = orig })
	memAvailable = func() int64 { return 512 << 20 } // less than torch alone needs

	s := settingsFor(t, t.TempDir())
	r := BaselineRun(context.Background(), s, tiny(t, "qwen3"), "test")
	b := r.Gates.HFBaseline
	if r.Status != verdict.Fail || b == nil || !strings.Contains(strings.Join(b.Reasons, " "), "not enough memory") || !strings.Contains(strings.Join(b.Reasons, " "), "--force") {
		t.Fatalf("status %s, baseline %+v", r.Status, b)
	}
	if b.Runner != "" {
		t.Errorf("the reference ran despite the refusal (runner %q)", b.Runner)
	}

	s.Force = true
	forced := BaselineRun(context.Background(), s, tiny(t, "qwen3"), "test")
	mustPass(t, forced)
	if !strings.Contains(strings.Join(forced.Warnings, " "), "not enough memory") {
		t.Errorf("--force must still warn: %q", forced.Warnings)
	}

	s.Force, s.MemoryCheck = false, false
	mustPass(t, BaselineRun(context.Background(), s, tiny(t, "qwen3"), "test"))
}

func TestReferenceMemoryFromInventory(t *testing.T) {
	m := preflight.CheckpointMemory(writeInventory(t))
	// Parameters are counted from the shapes, whatever the stored dtype: the
	// worker holds every one of them in bf16.
	if m.Parameters != 3*4+2 || m.Weights != (3*4+2)*2 {
		t.Errorf("parameters %d, weights %d bytes; want 14 and 28", m.Parameters, m.Weights)
	}
	if m.Peak != max(m.Loader, m.HF) {
		t.Errorf("peak %d is not the larger stage's (loader %d, HF %d)", m.Peak, m.Loader, m.HF)
	}
}

// The preflight judges the larger stage's peak, not the sum of both stages:
// exactly that much memory passes, a byte less fails.
func TestMemoryPreflightJudgesThePeak(t *testing.T) {
	dir := tiny(t, "qwen3")
	inv, err := safetensors.Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	need := preflight.CheckpointMemory(inv)
	if need.Peak >= need.Loader+need.HF {
		t.Fatalf("peak %d is the sum of the stages (%d + %d)", need.Peak, need.Loader, need.HF)
	}
	orig := memAvailable
	t.Cleanup(func() { memAvailable = orig })
	for _, tc := range []struct {
		avail int64
		want  verdict.Status
	}{{need.Peak, verdict.Pass}, {need.Peak - 1, verdict.Fail}} {
		memAvailable = func() int64 { return tc.avail }
		st := &state{in: inputs{s: &Settings{MemoryCheck: true}}, facts: facts{checkpoint: &checkpoint{inv: inv}}}
		m, out, err := memoryStage(context.Background(), st)
		if err != nil || out.Status != tc.want || !strings.Contains(out.Detail, "at peak, in the HF bf16 model's stage") {
			t.Errorf("%d bytes available (peak %d): preflight %s %q %v, want %s", tc.avail, need.Peak, out.Status, out.Detail, err, tc.want)
		}
		if failed := m.refusal != nil; failed != (tc.want == verdict.Fail) {
			t.Errorf("%d bytes available: the baseline refused: %v, want %v", tc.avail, failed, tc.want == verdict.Fail)
		}
	}
}

// writeInventory writes a real two-tensor checkpoint (one F32, one BF16) and inventories it.
func writeInventory(t *testing.T) *safetensors.Inventory {
	t.Helper()
	dir := t.TempDir()
	ts := []sttest.WriteTensor{
		{Name: "a", DType: "F32", Shape: []int64{3, 4}, Data: make([]byte, 48)},
		{Name: "b", DType: "BF16", Shape: []int64{2}, Data: make([]byte, 4)},
	}
	if err := sttest.WriteFile(filepath.Join(dir, "model.safetensors"), ts, nil); err != nil {
		t.Fatal(err)
	}
	inv, err := safetensors.Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	return inv
}
