package orchestrator

import (
	"context"
	"path/filepath"
	"phase0/internal/testenv"
	"slices"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/output/scaffold"
	"phase0/run/wsfolder"
)

// TestTreeDecidesTheFolder: without --name, a hub id goes to the folder of
// the llms tree that names it (base or instruct), else to the derived name;
// an id two Phase 0 folders name is refused; --name always wins. No Python.
func TestTreeDecidesTheFolder(t *testing.T) {
	llms := upstreamStyleTree(t)
	testenv.WriteFile(t, filepath.Join(llms, "qwen25_0_5b_copy", "verify_adapter.py"), `MODEL_CHOICES = {"base": "Qwen/Qwen2.5-0.5B"}`)
	testenv.WriteFile(t, filepath.Join(llms, "qwen25_0_5b_copy", "qwen25_0_5b_copy_weights.py"), "class LlamaConfig:\n    pass\n\n\ndef load_weights(path, dtype=None, config=None):\n    pass\n")
	for _, tc := range []struct {
		id, name, want, err string
	}{
		{"Qwen/Qwen2.5-0.5B-Instruct", "", "qwen25_0_5b", ""},
		{"qwen/qwen3-0.6b", "", "qwen3_0_6b", ""},
		{"meta-llama/Llama-3.2-1B-Instruct", "", "llama32_1b", ""}, // the q4nx packaging names it too, without a Phase 0 module
		{"FastFlowLM/Llama-3.2-1B-NPU2", "", "llama_3_2_1b_npu2", ""},
		{"HuggingFaceTB/SmolLM2-135M", "", "smollm2_135m", ""},
		{"Qwen/Qwen2.5-0.5B", "", "", "qwen25_0_5b, qwen25_0_5b_copy all name Qwen/Qwen2.5-0.5B"},
		{"Qwen/Qwen2.5-0.5B", "mine", "mine", ""},
		{filepath.Join(t.TempDir(), "Qwen2.5-0.5B"), "", "qwen2_5_0_5b", ""}, // a local folder names no hub id
	} {
		got, err := wsfolder.Name(tc.name, llms, tc.id)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("wsfolder.Name(%s, --name %q) = %q, %v; want %q, %q", tc.id, tc.name, got, err, tc.want, tc.err)
		}
	}
	// Without an llms tree the name is derived, as before.
	if got, err := wsfolder.Name("", "", "Qwen/Qwen2.5-0.5B"); got != "qwen2_5_0_5b" || err != nil {
		t.Errorf("without a tree: %q, %v", got, err)
	}
}

// TestGenerateErrorKeepsTheSweepWarning: a sweep that could not finish is a
// warning of the run, and it stays in the report when generate then fails
// (here on a workspace manifest that is not JSON).
func TestGenerateErrorKeepsTheSweepWarning(t *testing.T) {
	llms := t.TempDir()
	s := settingsFor(t, llms)
	s.Name = "sweepwarn"
	// A report folder that is a file: sweeping it fails.
	s.ReportDir = filepath.Join(t.TempDir(), "reports-is-a-file")
	testenv.WriteFile(t, s.ReportDir, "not a folder")
	// phase0's manifest (so the folder is phase0's, not foreign), unreadable.
	testenv.WriteFile(t, filepath.Join(llms, s.Name, scaffold.ManifestName), "{")
	r := RunBF16(context.Background(), s, tiny(t, "qwen3"), "test")
	if r.Status != verdict.Error || !strings.Contains(r.Error, scaffold.ManifestName) {
		t.Fatalf("status %s, error %q; want ERROR naming %s", r.Status, r.Error, scaffold.ManifestName)
	}
	if !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, s.ReportDir) }) {
		t.Errorf("warnings %q: want the failed sweep of %s", r.Warnings, s.ReportDir)
	}
}
