package quantfolder

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/read/llmstree"
)

// TestSourceVariable: Q4NX_MODEL_SOURCE set in the environment makes a
// folder that reads it load another bundle; phase0 judges that bundle (a
// folder holding model.q4nx, or the file), or refuses naming the variable
// (not a bundle, a hub id not cached). A folder that does not read the
// variable is judged on its own bundle.
func TestSourceVariable(t *testing.T) {
	llms, cache := t.TempDir(), t.TempDir()
	folder := filepath.Join(llms, "llama32_1b_q4nx")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	module := "class Q4nxModel:\n    def layer_weights(self, k):\n        pass\n"
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(folder, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("llama32_1b_q4nx_weights.py", module)
	u := llmstree.Use{Folder: "llama32_1b_q4nx", Module: "llama32_1b_q4nx_weights.py", Key: "instruct", Reference: "meta-llama/Llama-3.2-1B-Instruct", Bundle: "FastFlowLM/Llama-3.2-1B-NPU2"}
	exported := t.TempDir()
	rawBundle(t, exported, `{"w":{"dtype":"Q4NX","shape":[32,256],"data_offsets":[0,5120]}}`, 5120)

	// The folder does not read the variable: its own bundle (not cached here).
	if _, _, err := Open(llms, u, "/ref", cache, exported); err == nil || strings.Contains(err.Error(), SourceVar) || !strings.Contains(err.Error(), "bundle FastFlowLM/Llama-3.2-1B-NPU2") {
		t.Errorf("a folder that does not read %s: %v, want its own bundle's error", SourceVar, err)
	}
	write("llama32_1b_q4nx_prefill.py", "import os\nMODEL_DEFAULT = os.environ.get(\"Q4NX_MODEL_SOURCE\", \"FastFlowLM/Llama-3.2-1B-NPU2\")\n")
	for _, src := range []string{exported, filepath.Join(exported, "model.q4nx")} {
		q, _, err := Open(llms, u, "/ref", cache, src)
		if err != nil || q.Source != exported || len(q.BundleProblems) != 0 {
			t.Errorf("%s=%s: %+v, %v; want the exported bundle judged", SourceVar, src, q, err)
		}
	}
	for src, want := range map[string]string{
		filepath.Join(llms, "nowhere", "x"):                 "is neither an existing file or folder nor a hub id",
		"FastFlowLM/Llama-3.2-3B-NPU2":                      "is not in the HF cache",
		filepath.Join(folder, "llama32_1b_q4nx_weights.py"): "is a file not named model.q4nx",
		folder: "is a folder with no model.q4nx",
	} {
		if _, _, err := Open(llms, u, "/ref", cache, src); err == nil || !strings.Contains(err.Error(), SourceVar+"="+src) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%s: %v, want a refusal naming the variable and %q", SourceVar, src, err, want)
		}
	}
	// A broken exported bundle is named by the variable.
	rawBundle(t, exported, `{"w":{"dtype":"Q4NX","shape":[32,256],"data_offsets":[0,5120]}}`, 100)
	if q, _, err := Open(llms, u, "/ref", cache, exported); err != nil || len(q.BundleProblems) != 1 || !strings.Contains(q.BundleProblems[0], "bundle "+SourceVar+"="+exported) {
		t.Errorf("a truncated exported bundle: %+v, %v", q, err)
	}
}
