package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// A broken prompt file of the tree (issue 49 item 6: not UTF-8, empty,
// over 1 MiB, a FIFO) is the tree's input fault: exit 2 naming the file,
// from the llms_dir stage, before any Python runs (it was a gate-2 FAIL
// with a traceback from phase0_shim/prompts.py).
func TestRunRefusesABrokenPromptFile(t *testing.T) {
	model := writeModel(t, tinyLlama)
	for _, tc := range []struct {
		name string
		make func(path string) error
		want string
	}{
		{"not utf-8", func(p string) error { return os.WriteFile(p, []byte("The capital of France is\xff\n"), 0o644) }, "is not UTF-8 text (invalid byte 0xff at offset 24)"},
		{"empty", func(p string) error { return os.WriteFile(p, nil, 0o644) }, "holds no prompt"},
		{"only comments", func(p string) error { return os.WriteFile(p, []byte("# a\n\n  # b\n"), 0o644) }, "holds no prompt"},
		{"over 1 MiB", func(p string) error { return os.WriteFile(p, []byte(strings.Repeat("a prompt\n", 1<<17)), 0o644) }, "is larger than 1048576 bytes"},
		{"a fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "not a regular file (a named pipe)"},
		{"missing", func(p string) error { return nil }, "no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := t.TempDir()
			for _, d := range []string{"verify/runners", "verify/prompts"} {
				if err := os.MkdirAll(filepath.Join(tree, filepath.FromSlash(d)), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			os.WriteFile(filepath.Join(tree, "verify/runners/hf_runner.py"), []byte("class HfRunner: ...\n"), 0o644)
			os.WriteFile(filepath.Join(tree, "verify/prompts/base.txt"), []byte("The capital of France is\n"), 0o644)
			bad := filepath.Join(tree, "verify/prompts/instruct.txt")
			if err := tc.make(bad); err != nil {
				t.Fatal(err)
			}
			for _, cmd := range []string{"run", "baseline"} {
				code, stdout, _ := run(t, cmd, model, "--llms-dir", tree, "--json", "--python", "/no/python/needed")
				var rep struct {
					Status string `json:"status"`
					Error  string `json:"error"`
					Stages []struct {
						Name string `json:"name"`
					} `json:"stages"`
				}
				if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
					t.Fatalf("%s: %v\n%s", cmd, err, stdout)
				}
				if code != 2 || rep.Status != "ERROR" || !strings.Contains(rep.Error, bad) || !strings.Contains(rep.Error, tc.want) {
					t.Errorf("%s: exit %d, %s %q; want 2, ERROR naming %s and %q", cmd, code, rep.Status, rep.Error, bad, tc.want)
				}
				if n := len(rep.Stages); n != 1 || rep.Stages[0].Name != "llms_dir" {
					t.Errorf("%s: stages %+v, want only llms_dir (nothing before Python can run)", cmd, rep.Stages)
				}
			}
		})
	}
}
