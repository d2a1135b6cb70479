package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"phase0/internal/testenv"
)

// `inspect @T/hf_models.txt` on a tree whose folders use an id the list
// lacks: every row passes, and the list FAILs (exit 1) naming the id with
// the file and line that use it; --json carries the same.
func TestInspectTheTreesMap(t *testing.T) {
	tiny := filepath.Join(testenv.TinyModels(t), "qwen3")
	env := testenv.OfflineHub(t, map[string]string{"Qwen/Qwen3-4B": tiny})
	for _, k := range []string{"HF_HUB_CACHE", "HF_HOME", "HF_HUB_OFFLINE"} {
		t.Setenv(k, env(k))
	}
	tree := t.TempDir()
	testenv.WriteFile(t, filepath.Join(tree, "verify", "runners", "hf_runner.py"), "class HfRunner: ...\n")
	for _, style := range []string{"base", "instruct"} {
		testenv.WriteFile(t, filepath.Join(tree, "verify", "prompts", style+".txt"), "The capital of France is\n")
	}
	testenv.WriteFile(t, filepath.Join(tree, "qwen3_4b", "verify_adapter.py"), "MODEL_CHOICES = {\"base\": \"Qwen/Qwen3-4B\"}\n")
	testenv.WriteFile(t, filepath.Join(tree, "qwen3_4b_q4nx", "qwen3_4b_draft_weights.py"), "\nDRAFT_ID = \"z-lab/Qwen3-4B-DFlash-b16\"\n")
	list := filepath.Join(tree, "hf_models.txt")
	testenv.WriteFile(t, list, "Qwen/Qwen3-4B\n")

	code, stdout, stderr := run(t, "inspect", "@"+list)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the map fails the list); stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	flat := strings.Join(strings.Fields(stdout), " ")
	for _, want := range []string{"tree map (hf_models.txt): FAIL", "qwen3_4b_q4nx/qwen3_4b_draft_weights.py:2 uses z-lab/Qwen3-4B-DFlash-b16, which hf_models.txt does not list"} {
		if !strings.Contains(flat, want) {
			t.Errorf("the list's text lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, _ = run(t, "inspect", "@"+list, "--json")
	var tr struct {
		Status string `json:"status"`
		Models []struct {
			Status string `json:"status"`
		} `json:"models"`
		Map struct {
			Unlisted []struct {
				ID   string `json:"id"`
				Uses []struct {
					File string `json:"file"`
					Line int    `json:"line"`
				} `json:"uses"`
			} `json:"unlisted"`
		} `json:"tree_map"`
	}
	if err := json.Unmarshal([]byte(stdout), &tr); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if code != 1 || tr.Status != "FAIL" || len(tr.Models) != 1 || tr.Models[0].Status != "PASS" || len(tr.Map.Unlisted) != 1 ||
		tr.Map.Unlisted[0].ID != "z-lab/Qwen3-4B-DFlash-b16" || tr.Map.Unlisted[0].Uses[0].File != "qwen3_4b_draft_weights.py" || tr.Map.Unlisted[0].Uses[0].Line != 2 {
		t.Errorf("exit %d, JSON %+v: want FAIL with the row PASS and the drafter's use", code, tr)
	}
}
