package orchestrator

import (
	"os"
	"path/filepath"

	"context"
	"strings"
	"testing"

	"phase0/internal/sttest"
	"phase0/safetensors"
	"phase0/verdict"
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

func TestReferenceBytesEstimate(t *testing.T) {
	inv := writeInventory(t)
	params, need := referenceBytes(inv)
	if params != 3*4+2 {
		t.Errorf("params %d, want 14", params)
	}
	if want := int64(14*2*12/10) + torchOverhead; need != want {
		t.Errorf("need %d, want %d", need, want)
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
