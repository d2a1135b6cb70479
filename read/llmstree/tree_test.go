package llmstree

import (
	"errors"
	"os"
	"path/filepath"
	"phase0/internal/testenv"
	"slices"
	"strings"
	"testing"
)

const phase0Module = "@dataclass\nclass LlamaConfig:\n    n_layers: int = 2\n\n\ndef load_weights(model_name_or_path, dtype=None, config=None):\n    ...\n"

// tree lays out folders shaped like upstream's: a bf16 model folder, a
// quantized packaging naming the same bf16 ids, and folders naming nothing.
func tree(t *testing.T) string {
	llms := t.TempDir()
	for rel, content := range map[string]string{
		"qwen25_0_5b/verify_adapter.py":              `MODEL_CHOICES = {"base": "Qwen/Qwen2.5-0.5B", "instruct": "Qwen/Qwen2.5-0.5B-Instruct"}`,
		"qwen25_0_5b/qwen25_0_5b_inference.py":       `MODEL_CHOICES = {"base": "Qwen/Qwen2.5-0.5B", "instruct": "Qwen/Qwen2.5-0.5B-Instruct"}` + "\nEXTRA = \"Qwen/Qwen2.5-0.5B-Extra\"\n",
		"qwen25_0_5b/qwen25_0_5b_weights.py":         phase0Module,
		"llama32_1b/verify_adapter.py":               `MODEL_CHOICES = {"base": "meta-llama/Llama-3.2-1B", "instruct": "meta-llama/Llama-3.2-1B-Instruct"}`,
		"llama32_1b/llama32_1b_weights.py":           phase0Module,
		"llama32_1b_q4nx/verify_adapter.py":          `MODEL_CHOICES = {"base": "meta-llama/Llama-3.2-1B"}` + "\nSRC = \"FastFlowLM/Llama-3.2-1B-NPU2\"\n",
		"llama32_1b_q4nx/llama32_1b_q4nx_weights.py": "class Q4nxModel:\n    pass\n",
		"verify/verify_runner.py":                    `DEFAULT = "meta-llama/Llama-3.2-1B"`,
		"smolvla/smolvla_vision_weights.py":          "# no ids\n",
		".hidden/verify_adapter.py":                  `"meta-llama/Llama-3.2-1B"`,
	} {
		testenv.WriteFile(t, filepath.Join(llms, filepath.FromSlash(rel)), content)
	}
	return llms
}

func TestScanAndLookup(t *testing.T) {
	llms := tree(t)
	folders, err := Scan(llms, []string{"verify"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range folders {
		names = append(names, f.Name)
	}
	if want := []string{"llama32_1b", "llama32_1b_q4nx", "qwen25_0_5b"}; !slices.Equal(names, want) {
		t.Fatalf("folders %q, want %q", names, want)
	}
	q := folders[2]
	if !q.Phase0 || !slices.Equal(q.IDs, []string{"Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-0.5B-Extra"}) ||
		!slices.Equal(q.Files, []string{"verify_adapter.py", "qwen25_0_5b_inference.py"}) {
		t.Errorf("qwen25_0_5b read as %+v", q)
	}
	if folders[1].Phase0 {
		t.Errorf("the q4nx packaging counts as a Phase 0 folder")
	}
	for _, tc := range []struct{ id, want string }{
		{"Qwen/Qwen2.5-0.5B", "qwen25_0_5b"},
		{"qwen/qwen2.5-0.5b-instruct", "qwen25_0_5b"},
		{"meta-llama/Llama-3.2-1B", "llama32_1b"},
		{"FastFlowLM/Llama-3.2-1B-NPU2", ""}, // named only by a non-Phase 0 folder
		{"Qwen/Qwen3-0.6B", ""},
	} {
		got, err := Lookup(folders, tc.id)
		if err != nil || got != tc.want {
			t.Errorf("Lookup(%s) = %q, %v; want %q", tc.id, got, err, tc.want)
		}
	}
}

func TestLookupAmbiguous(t *testing.T) {
	llms := tree(t)
	testenv.WriteFile(t, filepath.Join(llms, "llama32_1b_copy", "verify_adapter.py"), `M = "meta-llama/Llama-3.2-1B"`)
	testenv.WriteFile(t, filepath.Join(llms, "llama32_1b_copy", "llama32_1b_copy_weights.py"), phase0Module)
	folders, err := Scan(llms, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Lookup(folders, "meta-llama/Llama-3.2-1B")
	if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "llama32_1b, llama32_1b_copy") || !strings.Contains(err.Error(), "--name") {
		t.Errorf("err = %v", err)
	}
}

func TestScanRefusesWhatItCannotRead(t *testing.T) {
	llms := tree(t)
	// A named pipe where a naming file should be is refused, never waited on.
	if err := os.Remove(filepath.Join(llms, "llama32_1b", AdapterFile)); err != nil {
		t.Fatal(err)
	}
	if err := mkfifo(filepath.Join(llms, "llama32_1b", AdapterFile)); err != nil {
		t.Skip("no named pipes here:", err)
	}
	if _, err := Scan(llms, nil); err == nil || !strings.Contains(err.Error(), AdapterFile) {
		t.Errorf("err = %v, want one naming %s", err, AdapterFile)
	}
}
