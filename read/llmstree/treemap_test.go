package llmstree

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"phase0/internal/testenv"
	"phase0/read/hfcache"
)

// mapTree writes an llms tree in upstream's style: a bf16 folder whose ids
// are in MODEL_CHOICES and its *_inference.py, a Q4NX folder whose draft
// reader's *_weights.py names a drafter (DRAFT_ID = "…", upstream's
// qwen3_4b_q4nx) and whose inference script names a dataset, paths, files
// and MIME types that look like ids.
func mapTree(t *testing.T) string {
	t.Helper()
	llms := t.TempDir()
	testenv.WriteFile(t, filepath.Join(llms, "verify", "runners", "hf_runner.py"), "class HfRunner: ...\n")
	testenv.WriteFile(t, filepath.Join(llms, "shared", "fused_decode", "q4_0_codec.py"), "")
	testenv.WriteFile(t, filepath.Join(llms, "qwen3_4b", "verify_adapter.py"), `MODEL_CHOICES = {
    "base": "Qwen/Qwen3-4B",
    "instruct": "Qwen/Qwen3-4B",
}
`)
	testenv.WriteFile(t, filepath.Join(llms, "qwen3_4b", "qwen3_4b_inference.py"), `import sys
sys.path.insert(0, "verify/runners")
tok = AutoTokenizer.from_pretrained("Qwen/Qwen3-4B")
`)
	testenv.WriteFile(t, filepath.Join(llms, "qwen3_4b_q4nx", "verify_adapter.py"), `MODEL_CHOICES = {"base": "Qwen/Qwen3-4B"}
HF_MODEL = "FastFlowLM/Qwen3-4B-NPU2"
`)
	testenv.WriteFile(t, filepath.Join(llms, "qwen3_4b_q4nx", "qwen3_4b_draft_weights.py"), `import glob

DRAFT_ID = "z-lab/Qwen3-4B-DFlash-b16"
D = 2560

def _default_snapshot():
    pat = "~/.cache/huggingface/hub/models--z-lab--Qwen3-4B-DFlash-b16/snapshots/*/model.safetensors"
    return glob.glob(pat)
`)
	testenv.WriteFile(t, filepath.Join(llms, "qwen3_4b_q4nx", "qwen3_4b_q4nx_inference.py"), `import argparse
ap = argparse.ArgumentParser()
ap.add_argument("--dataset", default="lerobot/droid_100")
ap.add_argument("--model", default="FastFlowLM/Qwen3-4B-NPU2")
headers = {"Content-Type": "application/json"}
codec = "fused_decode/q4_0_codec.py"
helpers = "shared/fused_decode"
out = "build/final"
# "not/this" in a comment
tok = AutoTokenizer.from_pretrained('Qwen/Qwen3-0.6B')
`)
	testenv.WriteFile(t, filepath.Join(llms, ".hidden", "verify_adapter.py"), `X = "hidden/Model-1B"`)
	testenv.WriteFile(t, filepath.Join(llms, "qwen3_4b_q4nx", "notes.py"), `Y = "other/Not-Read-1B"`)
	return llms
}

func TestMentions(t *testing.T) {
	ms, err := Mentions(mapTree(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.ID+" "+m.Where())
	}
	want := []string{
		"Qwen/Qwen3-4B qwen3_4b/verify_adapter.py:2",
		"Qwen/Qwen3-4B qwen3_4b/qwen3_4b_inference.py:3",
		"Qwen/Qwen3-4B qwen3_4b_q4nx/verify_adapter.py:1",
		"FastFlowLM/Qwen3-4B-NPU2 qwen3_4b_q4nx/verify_adapter.py:2",
		"FastFlowLM/Qwen3-4B-NPU2 qwen3_4b_q4nx/qwen3_4b_q4nx_inference.py:4",
		"Qwen/Qwen3-0.6B qwen3_4b_q4nx/qwen3_4b_q4nx_inference.py:10",
		"z-lab/Qwen3-4B-DFlash-b16 qwen3_4b_q4nx/qwen3_4b_draft_weights.py:3",
	}
	if !slices.Equal(got, want) {
		t.Errorf("mentions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestMapFindings(t *testing.T) {
	ms, err := Mentions(mapTree(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	unlisted, unused := MapFindings(ms, []string{"qwen/qwen3-4b", "FastFlowLM/Qwen3-4B-NPU2", "meta-llama/Llama-3.2-1B"})
	var ids []string
	for _, g := range unlisted {
		ids = append(ids, fmt.Sprintf("%s×%d", g[0].ID, len(g)))
	}
	if want := []string{"Qwen/Qwen3-0.6B×1", "z-lab/Qwen3-4B-DFlash-b16×1"}; !slices.Equal(ids, want) {
		t.Errorf("unlisted %q, want %q", ids, want)
	}
	if want := []string{"meta-llama/Llama-3.2-1B"}; !slices.Equal(unused, want) {
		t.Errorf("unused %q, want %q", unused, want)
	}
}

// The map reads at most maxMapFiles *_weights.py files of a folder.
func TestMentionsBounded(t *testing.T) {
	llms := t.TempDir()
	for i := range 2 * maxMapFiles {
		testenv.WriteFile(t, filepath.Join(llms, "many", fmt.Sprintf("m%02d_weights.py", i)), fmt.Sprintf("ID = \"org/Model-%02d\"\n", i))
	}
	ms, err := Mentions(llms, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != maxMapFiles {
		t.Errorf("%d mentions from %d files, want the bound %d", len(ms), 2*maxMapFiles, maxMapFiles)
	}
}

func TestMentionsUnreadableTree(t *testing.T) {
	if _, err := Mentions(filepath.Join(t.TempDir(), "missing"), nil); err == nil || !strings.Contains(err.Error(), "reading the llms tree") {
		t.Errorf("err = %v", err)
	}
	llms := t.TempDir()
	if err := os.MkdirAll(filepath.Join(llms, "f", "verify_adapter.py"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Mentions(llms, nil); err == nil || !strings.Contains(err.Error(), "verify_adapter.py") {
		t.Errorf("a folder named verify_adapter.py: err = %v", err)
	}
}

func FuzzHubIDsAt(f *testing.F) {
	for _, s := range []string{
		"MODEL_CHOICES = {\n  \"base\": \"Qwen/Qwen2.5-0.5B\",\n}\nDRAFT_ID = 'z-lab/Qwen3-4B-DFlash-b16'\n",
		"\"\"\"doc\n\"a/b\" \"\"\"\n'c/d' # 'e/f'\n", "x = (\n\"org/one\"\n\"org/two\")", "'''\n\n'''\"o/p\"",
		"ap.add_argument('--dataset', default='lerobot/droid_100')\n\"m/n\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		lines := strings.Split(string(src), "\n")
		keepAll := hubIDsAt(src, nil)
		skipDatasets := hubIDsAt(src, func(_ string, line []byte) bool { return !datasetLine.Match(line) })
		if len(keepAll) > maxIDsInFile || len(skipDatasets) > maxIDsInFile {
			t.Fatalf("%d, %d ids, more than %d", len(keepAll), len(skipDatasets), maxIDsInFile)
		}
		for _, ids := range [][]IDAt{keepAll, skipDatasets} {
			seen := map[string]bool{}
			for _, at := range ids {
				if seen[at.ID] {
					t.Fatalf("duplicate %q", at.ID)
				}
				seen[at.ID] = true
				if _, err := hfcache.ParseID(at.ID); err != nil {
					t.Fatalf("%q is not a hub id: %v", at.ID, err)
				}
				if at.Line < 1 || at.Line > len(lines) || !strings.Contains(lines[at.Line-1], at.ID) {
					t.Fatalf("%q is not on line %d of %q", at.ID, at.Line, src)
				}
			}
		}
		for _, at := range skipDatasets {
			if datasetLine.MatchString(lines[at.Line-1]) {
				t.Fatalf("%q kept on a dataset line %d", at.ID, at.Line)
			}
		}
	})
}
