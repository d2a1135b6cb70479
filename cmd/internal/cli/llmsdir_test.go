package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --llms-dir that is not an llms tree (a typo, the repository root) is
// refused with exit 2 and one JSON object naming what is missing, before
// anything is written; the repository root gets a pointer to the tree.
func TestRunRefusesAWrongLLMSDir(t *testing.T) {
	model := writeModel(t, tinyLlama)
	repo := t.TempDir()
	tree := filepath.Join(repo, "programming_examples", "llms")
	for _, d := range []string{"verify/runners", "verify/prompts"} {
		if err := os.MkdirAll(filepath.Join(tree, filepath.FromSlash(d)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tree, "verify/runners/hf_runner.py"), []byte("class HfRunner: ...\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noPrompts := t.TempDir()
	if err := os.MkdirAll(filepath.Join(noPrompts, "verify", "runners"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(noPrompts, "verify/runners/hf_runner.py"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir string
		want      []string
	}{
		{"repository root", repo, []string{filepath.Join(repo, "verify/runners/hf_runner.py"), filepath.Join(repo, "verify/prompts"), "did you mean --llms-dir " + tree}},
		{"typo", repo + "-typo", []string{filepath.Join(repo+"-typo", "verify/runners/hf_runner.py"), "programming_examples/llms"}},
		{"no prompts", noPrompts, []string{filepath.Join(noPrompts, "verify/prompts")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, cmd := range []string{"run", "baseline"} {
				code, stdout, _ := run(t, cmd, model, "--llms-dir", tc.dir, "--json")
				var rep struct {
					Status string `json:"status"`
					Error  string `json:"error"`
				}
				dec := json.NewDecoder(strings.NewReader(stdout))
				if err := dec.Decode(&rep); err != nil || dec.More() {
					t.Fatalf("%s: stdout is not exactly one JSON object (%v):\n%s", cmd, err, stdout)
				}
				if code != 2 || rep.Status != "ERROR" {
					t.Fatalf("%s: exit %d, status %s; want 2, ERROR", cmd, code, rep.Status)
				}
				for _, w := range tc.want {
					if !strings.Contains(rep.Error, w) {
						t.Errorf("%s: error %q does not name %q", cmd, rep.Error, w)
					}
				}
				if strings.Contains(rep.Error, filepath.Join(tc.dir, "verify/runners/hf_runner.py")) == (tc.name == "no prompts") {
					t.Errorf("%s: error %q names a part that is there, or omits one that is not", cmd, rep.Error)
				}
			}
			if entries, _ := os.ReadDir(tree); len(entries) != 1 {
				t.Errorf("the refused run wrote into %s: %d entries", tree, len(entries))
			}
		})
	}
}

func TestOutDirAndLLMSDirAreExclusive(t *testing.T) {
	model := writeModel(t, tinyLlama)
	code, stdout, _ := run(t, "run", model, "--llms-dir", t.TempDir(), "--out-dir", t.TempDir(), "--json")
	if code != 2 || !strings.Contains(stdout, "out_dir") || !strings.Contains(stdout, "llms_dir") {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
}
