package report

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/internal/testenv"
)

// offlineQuantRows are a tree's list on an offline machine where a bundle
// is cached but its reference is not (the bundle's row needs the
// reference), a reference id is missing on its own row, and a quantized
// folder's bundle is missing.
func offlineQuantRows() []ListRow {
	const cache = "/root/.cache/huggingface/hub"
	notCached := func(id string) string {
		return "model not available from the hub: " + id + " is not in the cache (" + cache + ") and the hub is switched off (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE); download it first or unset them"
	}
	return []ListRow{
		{Report: &Report{Model: "FastFlowLM/Gemma3-4B-NPU2", Status: verdict.Error, Error: notCached("unsloth/gemma-3-4b-it")}, ListedAt: "hf_models.txt:40"},
		{Report: &Report{Model: "unsloth/gemma-3-4b-it", Status: verdict.Error, Error: notCached("unsloth/gemma-3-4b-it")}, ListedAt: "hf_models.txt:41"},
		{Report: &Report{Model: "FastFlowLM/Qwen3-8B-NPU2", Status: verdict.Error, Error: notCached("Qwen/Qwen3-8B")}, ListedAt: "hf_models.txt:46"},
		{Report: &Report{Model: "Qwen/Qwen3-8B", Status: verdict.Error, Error: notCached("Qwen/Qwen3-8B")}, ListedAt: "hf_models.txt:47"},
		{Report: &Report{Model: "Qwen/Qwen2.5-3B-Instruct", Status: verdict.Error,
			Error: "key instruct: bundle FastFlowLM/Qwen2.5-3B-Instruct-NPU2 of qwen25_3b_q4 is not in the HF cache (phase0 reads bundles offline; fetch it with `hf download FastFlowLM/Qwen2.5-3B-Instruct-NPU2`): no such folder"}, ListedAt: "hf_models.txt:12"},
	}
}

// fetchBlock is the fetch command of a list's causes: from its `for` to
// its `done`.
func fetchBlock(t *testing.T, text string) string {
	t.Helper()
	start := strings.Index(text, "  for id in")
	end := strings.Index(text, "; done\n")
	if start < 0 || end < start {
		t.Fatalf("no fetch command:\n%s", text)
	}
	return text[start : end+len("; done\n")]
}

// Every missing id of a list is in one fetch command, whichever row needs
// it: a bundle's row names the reference it lacks (not the bundle, which
// is cached), and a quantized folder's missing bundle is fetched by the
// same command, not a block of its own.
func TestCausesFetchEveryMissingIDOnce(t *testing.T) {
	text := Causes(offlineQuantRows())
	if n := strings.Count(text, "for id in"); n != 1 {
		t.Fatalf("%d fetch commands, want one for the list:\n%s", n, text)
	}
	block := fetchBlock(t, text)
	_, ids, _ := strings.Cut(block, "for id in")
	ids, _, _ = strings.Cut(ids, "; do")
	got := strings.Fields(strings.ReplaceAll(ids, "\\", " "))
	if want := []string{"unsloth/gemma-3-4b-it", "Qwen/Qwen3-8B", "FastFlowLM/Qwen2.5-3B-Instruct-NPU2"}; !slices.Equal(got, want) {
		t.Errorf("the fetch command fetches %q, want exactly the missing %q:\n%s", got, want, text)
	}
	for _, want := range []string{"5 models ERROR: 3 hub ids not in the HF cache (/root/.cache/huggingface/hub)",
		"FastFlowLM/Gemma3-4B-NPU2 needs unsloth/gemma-3-4b-it", "Qwen/Qwen2.5-3B-Instruct needs FastFlowLM/Qwen2.5-3B-Instruct-NPU2", "hf auth login"} {
		if !strings.Contains(strings.Join(strings.Fields(text), " "), want) {
			t.Errorf("causes lack %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "huggingface-cli") {
		t.Errorf("a hint names huggingface-cli, which huggingface_hub ≥ 1.0 no longer ships:\n%s", text)
	}
}

// TestFetchCommandRunsWithHF: the fetch hint, pasted into a shell whose
// PATH is the venv's (huggingface_hub 1.x ships only `hf`), downloads every
// file phase0 reads of each missing model or bundle (model.q4nx and the
// card beside config, tokenizer and safetensors) into the HF cache, and
// never a pickle.
func TestFetchCommandRunsWithHF(t *testing.T) {
	py := testenv.Python(t)
	hfBin := filepath.Join(filepath.Dir(py), "hf")
	if _, err := os.Stat(hfBin); err != nil {
		t.Fatalf("the venv has no hf CLI: %v", err)
	}
	files := map[string][]byte{"config.json": []byte(`{"model_type": "qwen3"}`), "tokenizer.json": []byte("{}"),
		"tokenizer.model": []byte("spm"), "merges.txt": []byte("a b\n"), "README.md": []byte("---\nbase_model: Qwen/Qwen3-8B\n---\n"),
		"model-00001-of-00002.safetensors": testenv.TinySafetensors(t, map[string][]float32{"w": {1, 2}}),
		"model.q4nx":                       []byte("q4nx bytes"), "pytorch_model.bin": []byte("a pickle phase0 must not download")}
	const sha = "0123456789abcdef0123456789abcdef01234567"
	repos := []*testenv.FakeRepo{{ID: "tiny-org/bundle-NPU2", Refs: map[string]string{"main": sha}, Files: files},
		{ID: "tiny-org/Reference-1B", Refs: map[string]string{"main": sha}, Files: files}}
	hub := testenv.NewFakeHub(t, repos...)
	cache := t.TempDir()
	rows := []ListRow{}
	for _, r := range repos {
		rows = append(rows, ListRow{Report: &Report{Model: r.ID, Status: verdict.Error,
			Error: "model not available from the hub: " + r.ID + " is not in the cache (" + cache + ") and the hub is switched off (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE); download it first or unset them"}})
	}
	cmd := exec.Command("sh", "-c", fetchBlock(t, Causes(rows)))
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(py)+":/usr/bin:/bin", "HF_ENDPOINT="+hub.URL(), "HF_HUB_CACHE="+cache,
		"HF_HOME="+t.TempDir(), "HF_TOKEN=", "HF_HUB_OFFLINE=1", "HF_HUB_DISABLE_XET=1", "HF_HUB_DISABLE_TELEMETRY=1", "HF_HUB_DISABLE_UPDATE_CHECK=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the fetch hint failed: %v\n%s", err, out)
	}
	for _, r := range repos {
		snap := filepath.Join(cache, "models--"+strings.ReplaceAll(r.ID, "/", "--"), "snapshots", sha)
		for name := range files {
			_, err := os.Stat(filepath.Join(snap, name))
			if name == "pytorch_model.bin" {
				if err == nil {
					t.Errorf("%s: the fetch hint downloaded a pickle", r.ID)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: the fetch hint left out %s: %v", r.ID, name, err)
			}
		}
	}
}
