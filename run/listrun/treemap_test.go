package listrun

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/read/modellist"
)

// mapTree is an llms tree in upstream's style whose hf_models.txt lacks the
// drafter qwen3_4b_q4nx's draft reader loads (DRAFT_ID, line 4) and the
// bundle its adapter names, and lists one id no folder uses.
func mapTree(t *testing.T) (tree, list string) {
	t.Helper()
	tree = t.TempDir()
	testenv.WriteFile(t, filepath.Join(tree, "verify", "runners", "hf_runner.py"), "class HfRunner: ...\n")
	for _, style := range []string{"base", "instruct"} {
		testenv.WriteFile(t, filepath.Join(tree, "verify", "prompts", style+".txt"), "The capital of France is\n")
	}
	testenv.WriteFile(t, filepath.Join(tree, "qwen3_4b", "verify_adapter.py"), "MODEL_CHOICES = {\"base\": \"Qwen/Qwen3-4B\", \"instruct\": \"Qwen/Qwen3-4B\"}\n")
	testenv.WriteFile(t, filepath.Join(tree, "qwen3_4b_q4nx", "verify_adapter.py"), "MODEL_CHOICES = {\n    \"base\": \"Qwen/Qwen3-4B\",\n}\n_BUNDLE = \"FastFlowLM/Qwen3-4B-NPU2\"\n")
	testenv.WriteFile(t, filepath.Join(tree, "qwen3_4b_q4nx", "qwen3_4b_draft_weights.py"), "import glob\n\n# the DFlash drafter\nDRAFT_ID = \"z-lab/Qwen3-4B-DFlash-b16\"\n")
	list = filepath.Join(tree, ListName)
	testenv.WriteFile(t, list, "# the tree's models\nQwen/Qwen3-4B\nmeta-llama/Llama-3.2-1B\n")
	return tree, list
}

func TestJudgeMap(t *testing.T) {
	tree, list := mapTree(t)
	for _, tc := range []struct {
		name, llms string
	}{{"run --llms-dir", tree}, {"inspect: the list's folder is the tree", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			m := JudgeMap(tc.llms, []string{"@" + list}, modellist.Shard{})
			if m == nil {
				t.Fatal("the tree's own hf_models.txt was not judged")
			}
			if m.Status != verdict.Fail || len(m.Unlisted) != 2 || m.Unlisted[0].ID != "FastFlowLM/Qwen3-4B-NPU2" || m.Unlisted[1].ID != "z-lab/Qwen3-4B-DFlash-b16" {
				t.Fatalf("map %+v: want FAIL naming the bundle and the drafter", m)
			}
			text := strings.Join(strings.Fields(m.Text()), " ")
			for _, want := range []string{"tree map (hf_models.txt): FAIL: hf_models.txt lacks 2 of the 3 hub ids the tree's folders use",
				"qwen3_4b_q4nx/qwen3_4b_draft_weights.py:4 uses z-lab/Qwen3-4B-DFlash-b16, which hf_models.txt does not list",
				"qwen3_4b_q4nx/verify_adapter.py:4 uses FastFlowLM/Qwen3-4B-NPU2",
				"note: 1 listed hub id(s) no folder's verify_adapter.py, *_inference.py or *_weights.py uses: meta-llama/Llama-3.2-1B"} {
				if !strings.Contains(text, want) {
					t.Errorf("the map's text lacks %q:\n%s", want, m.Text())
				}
			}
			b := &Batch{Status: verdict.Pass, Models: []*BatchRow{}}
			b.SetMap(m)
			if b.Status != verdict.Fail || b.ExitCode() != 1 {
				t.Errorf("a list whose rows passed and whose map failed: %s, exit %d; want FAIL, exit 1", b.Status, b.ExitCode())
			}
			js, err := json.Marshal(b)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(js), `"uses":[{"id":"z-lab/Qwen3-4B-DFlash-b16","folder":"qwen3_4b_q4nx","file":"qwen3_4b_draft_weights.py","line":4}]`) {
				t.Errorf("the JSON does not carry the use:\n%s", js)
			}
		})
	}
}

// A list that is not the tree's map is not judged as one; with --shard
// only shard 1 judges it; every id listed is a PASS with the note.
func TestJudgeMapOnlyTheTreesOwnList(t *testing.T) {
	tree, list := mapTree(t)
	other := filepath.Join(t.TempDir(), ListName)
	testenv.WriteFile(t, other, "Qwen/Qwen3-4B\n")
	if m := JudgeMap(tree, []string{"@" + other}, modellist.Shard{}); m != nil {
		t.Errorf("a list of one's own was judged as the tree's map: %+v", m)
	}
	if m := JudgeMap("", []string{"@" + other}, modellist.Shard{}); m != nil {
		t.Errorf("a list outside any tree was judged: %+v", m)
	}
	if m := JudgeMap(tree, []string{"Qwen/Qwen3-4B"}, modellist.Shard{}); m != nil {
		t.Errorf("a model argument was judged as a map: %+v", m)
	}
	if m := JudgeMap(tree, []string{"@" + list}, modellist.Shard{I: 2, N: 4}); m != nil {
		t.Errorf("shard 2/4 judged the map: %+v", m)
	}
	if m := JudgeMap(tree, []string{"@" + list}, modellist.Shard{I: 1, N: 4}); m == nil || m.Status != verdict.Fail {
		t.Errorf("shard 1/4 did not judge the map: %+v", m)
	}
	testenv.WriteFile(t, list, "Qwen/Qwen3-4B\nFastFlowLM/Qwen3-4B-NPU2\nz-lab/Qwen3-4B-DFlash-b16\n")
	if m := JudgeMap(tree, []string{"@" + list}, modellist.Shard{}); m == nil || m.Status != verdict.Pass || len(m.Findings) != 0 {
		t.Errorf("a complete map: %+v, want PASS without findings", m)
	}
}
