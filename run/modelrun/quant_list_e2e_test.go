package modelrun_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/output/report"
	"phase0/read/modellist"
	"phase0/run/listrun"
	"phase0/run/modelrun"
	"phase0/run/quantkey/quanttest"
)

// TestQuantizedTreeList: upstream's own hf_models.txt (30 lines) through
// the quantized fixture tree gives every line a row with a verdict or a
// reason: smolvla's id REJECTED with its code, Gemma 3's and Phi-4-mini's
// ids (validated deployments, references not cached) an ERROR naming the
// reference, the
// bundle one row of both its keys (the worst: the base key's pairing
// FAIL), the bf16 ids validated in their folders, an id only a quantized
// folder pairs and not cached an ERROR naming it. The tree is unchanged.
func TestQuantizedTreeList(t *testing.T) {
	t.Parallel()
	const (
		bundleID   = "FastFlowLM/Llama-3.2-1B-NPU2"
		llamaInstr = "meta-llama/Llama-3.2-1B-Instruct"
	)
	s, sameTree := quanttest.CleanTree(t, modelrun.TestSessions)
	entries, err := modellist.ReadFile(filepath.Join("testdata", "hf_models_upstream.txt"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := listrun.RunMany(context.Background(), s, entries, "test")
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t)
	if len(b.Models) != 30 {
		t.Fatalf("%d rows for upstream's 30 lines", len(b.Models))
	}
	rows := map[string]*listrun.BatchRow{}
	for _, m := range b.Models {
		rows[m.Model] = m
		if !m.Status.Valid() || (m.Status != verdict.Pass && reason(m.Report) == "") {
			t.Errorf("%s (%s): %s with no reason", m.Model, m.ListedAt, m.Status)
		}
	}
	if r := rows["lerobot/smolvla_base"]; r == nil || r.Status != verdict.Rejected || !strings.Contains(reason(r.Report), "[unsupported_architecture]") {
		t.Errorf("lerobot/smolvla_base: not REJECTED with unsupported_architecture: %+v", r)
	}
	// Gemma 3's and Phi-4-mini's deployments are validated, not refused
	// (issue 38): their references are not cached here, so each id, bundle
	// or reference, is an ERROR naming the reference to fetch.
	for id, ref := range map[string]string{"unsloth/gemma-3-4b-it": "unsloth/gemma-3-4b-it", "FastFlowLM/Gemma3-4B-NPU2": "unsloth/gemma-3-4b-it",
		"microsoft/Phi-4-mini-instruct": "microsoft/Phi-4-mini-instruct", "FastFlowLM/Phi4-mini-Instruct-NPU2": "microsoft/Phi-4-mini-instruct"} {
		if r := rows[id]; r == nil || r.Status != verdict.Error || !strings.Contains(r.Error, ref) {
			t.Errorf("%s: not an ERROR naming %s: %+v", id, ref, r)
		}
	}
	if r := rows[bundleID]; r == nil || r.Quantized == nil || len(r.Keys) != 1 || r.Status != verdict.Fail {
		t.Errorf("%s: not one row of both keys, worst FAIL (the base key's pairing): %+v", bundleID, r)
	}
	if r := rows[llamaInstr]; r == nil || r.Workspace == nil || r.Workspace.Name != "llama32_1b" {
		t.Errorf("%s: not validated in its bf16 folder: %+v", llamaInstr, r)
	}
	if r := rows["Qwen/Qwen3-8B"]; r == nil || r.Status != verdict.Error || !strings.Contains(r.Error, "Qwen/Qwen3-8B") {
		t.Errorf("Qwen/Qwen3-8B (only qwen3_8b_q4nx's reference, not cached): %+v", r)
	}
	t.Logf("\n%s", b.Text())
}

// reason is why a row did not pass, in one line (report.Reason).
func reason(r *report.Report) string {
	why, _ := report.Reason(r)
	return why.Message
}
