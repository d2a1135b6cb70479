package orchestrator

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"phase0/gate/config"
	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/output/report"
)

// upstreamStyleTree is an llms tree holding the hand-written model folders
// of pyshim/tests/data/upstream (upstream's style, tiny dimensions: no
// rms_norm_eps in the Config, eps hard-coded in the helpers, float64 RoPE,
// llama32_1b's table ignoring llama3 scaling, ids named in verify_adapter.py
// and *_inference.py), a quantized packaging that names the bf16 Llama's ids
// without a Phase 0 module, and the verify runner.
func upstreamStyleTree(t *testing.T) string {
	t.Helper()
	llms := t.TempDir()
	testenv.CopyTestData(t, filepath.Join(llms, "verify"), "llms/verify")
	for _, name := range []string{"llama32_1b", "qwen3_0_6b", "qwen25_0_5b"} {
		testenv.CopyTestData(t, filepath.Join(llms, name), "upstream/"+name)
	}
	testenv.WriteFile(t, filepath.Join(llms, "llama32_1b_q4nx", "verify_adapter.py"),
		"MODEL_CHOICES = {\n    \"base\": \"meta-llama/Llama-3.2-1B\",\n    \"instruct\": \"meta-llama/Llama-3.2-1B-Instruct\",\n}\nQ4NX_MODEL_SOURCE = \"FastFlowLM/Llama-3.2-1B-NPU2\"\n")
	testenv.WriteFile(t, filepath.Join(llms, "llama32_1b_q4nx", "llama32_1b_q4nx_weights.py"), "class Q4nxModel:\n    pass\n")
	testenv.WriteFile(t, filepath.Join(llms, "hf_models.txt"), "meta-llama/Llama-3.2-1B\nQwen/Qwen2.5-0.5B\nQwen/Qwen3-0.6B\n")
	return llms
}

// TestUpstreamStyleTree: the tree decides the folder and gate 3 judges what
// hand-written modules do. Hub ids (from an offline HF cache) are validated
// in the folder whose MODEL_CHOICES names them, not in a derived one; the
// Qwen modules PASS gates 1 and 3 although their Config carries no
// rms_norm_eps; the Llama module FAILs gate 3 naming the llama3 scaling its
// RoPE table ignores; another model under an existing folder's name exits 2
// with the tree unchanged.
func TestUpstreamStyleTree(t *testing.T) {
	llms := upstreamStyleTree(t)
	env := testenv.OfflineHub(t, map[string]string{
		"Qwen/Qwen2.5-0.5B":       tiny(t, "qwen2"),
		"Qwen/Qwen3-0.6B":         tiny(t, "qwen3"),
		"meta-llama/Llama-3.2-1B": tiny(t, "llama-llama3"),
	})
	cache := t.TempDir() // phase0's cache: the records of validated folders go there
	settings := func(name string) *Settings {
		s := settingsFor(t, llms)
		s.Env, s.Name, s.CacheDir = env, name, cache
		return s
	}
	for _, tc := range []struct {
		id, folder string
		status     verdict.Status
	}{
		{"Qwen/Qwen2.5-0.5B", "qwen25_0_5b", verdict.Pass},
		{"Qwen/Qwen3-0.6B", "qwen3_0_6b", verdict.Pass},
		{"meta-llama/Llama-3.2-1B", "llama32_1b", verdict.Fail},
	} {
		t.Run(tc.id, func(t *testing.T) {
			before := testenv.SnapshotTree(t, llms)
			r := RunBF16(context.Background(), settings(""), tc.id, "test")
			if r.Workspace == nil || r.Workspace.Name != tc.folder || r.Workspace.Mode != report.ModeValidatedExisting || !slices.Contains(r.Workspace.NamedBy, "verify_adapter.py") {
				b, _ := r.JSON()
				t.Fatalf("not validated in %s found by verify_adapter.py:\n%s", tc.folder, b)
			}
			if r.Gates.Weights.Status != verdict.Pass || r.Gates.PyWeights.Status != verdict.Pass {
				t.Errorf("gate 1: native %s, python %s (%s)", r.Gates.Weights.Status, r.Gates.PyWeights.Status, r.Gates.PyWeights.Summary)
			}
			cc := r.Gates.ConfigConsistency
			notes := strings.Join(cc.Notes, "\n")
			if r.Status != tc.status {
				t.Errorf("status %s, want %s; gate 3: %s\n%s", r.Status, tc.status, cc.Summary, strings.Join(cc.AllFindings(), "\n"))
			}
			if !strings.Contains(notes, "has no field rms_norm_eps (config.json: ") || !strings.Contains(notes, "not written by phase0") {
				t.Errorf("gate 3 notes do not say how the absent rms_norm_eps was judged:\n%s", notes)
			}
			for _, f := range append(cc.AllFindings(), notes, cc.Summary) {
				if strings.Contains(f, "generated LlamaConfig") || strings.Contains(f, config.SourceGenerated) {
					t.Errorf("a hand-written module's Config is called generated: %s", f)
				}
			}
			if !slices.Contains(cc.Sources, config.SourceModule) {
				t.Errorf("gate 3 sources %v lack %s", cc.Sources, config.SourceModule)
			}
			if tc.status == verdict.Pass {
				if cc.Status != verdict.Pass || !slices.Contains(cc.Checked, "behaviour.rope_table") || !slices.Contains(cc.Checked, "behaviour.rms_norm") {
					t.Errorf("gate 3 %s, checked %v:\n%s", cc.Status, cc.Checked, strings.Join(cc.AllFindings(), "\n"))
				}
			} else {
				if ExitCode(r) != 1 || cc.Status != verdict.Fail || len(cc.Mismatches) != 1 || cc.Mismatches[0].Field != "rope_scaling" || cc.Mismatches[0].Source != config.SourceBehaviour {
					b, _ := r.JSON()
					t.Fatalf("the RoPE table that ignores llama3 scaling is not gate 3's one FAIL:\n%s", b)
				}
				for _, w := range []string{"ignores config.json's rope scaling (llama3, factor 32", "first beyond one step at position", "bf16 steps"} {
					if !strings.Contains(cc.Mismatches[0].Message, w) {
						t.Errorf("%q does not say %q", cc.Mismatches[0].Message, w)
					}
				}
			}
			// The tree stays as it was: validated folders get no file, and
			// no derived folder appears beside them.
			after := testenv.SnapshotTree(t, llms)
			testenv.UnchangedExcept(t, before, after)
			for p := range after {
				if _, ok := before[p]; !ok {
					t.Errorf("validating %s wrote %s", tc.folder, p)
				}
			}
			if r.Workspace.RecordDir == "" || !strings.HasPrefix(r.Workspace.RecordDir, cache) {
				t.Errorf("the record of a validated folder is at %q, not in phase0's cache %s", r.Workspace.RecordDir, cache)
			}
		})
	}

	// Another model under an existing folder's name: refused before anything is written.
	for _, tc := range []struct {
		name, model, folder string
		want                []string
	}{
		{"a hub id the folder does not name", "meta-llama/Llama-3.2-1B", "qwen3_0_6b",
			[]string{"workspace name collision", "Qwen/Qwen3-0.6B", "verify_adapter.py", "meta-llama/Llama-3.2-1B", "--name llama32_1b"}},
		{"a local checkpoint of other dimensions", tiny(t, "qwen3"), "qwen25_0_5b",
			[]string{"workspace name collision", "qwen25_0_5b_weights.py describes another model", "head_dim 16 (module) vs 32 (checkpoint)", "--name qwen3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := testenv.SnapshotTree(t, llms)
			r := RunBF16(context.Background(), settings(tc.folder), tc.model, "test")
			if r.Status != verdict.Error || ExitCode(r) != 2 {
				t.Fatalf("status %s, exit %d, error %q; want ERROR, 2", r.Status, ExitCode(r), r.Error)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Error, w) {
					t.Errorf("error %q does not say %q", r.Error, w)
				}
			}
			after := testenv.SnapshotTree(t, llms)
			testenv.UnchangedExcept(t, before, after)
			for p := range after {
				if _, ok := before[p]; !ok {
					t.Errorf("a refused run wrote %s", p)
				}
			}
		})
	}
}
