package llmstree

import (
	"os"
	"path/filepath"
	"phase0/internal/testenv"
	"reflect"
	"slices"
	"testing"
)

// quantTree lays out quantized folders in upstream's three loader styles:
// a class-only bundle reader (llama32_1b_q4nx), a load_*weights* function
// reading a bundle named in the module (llama31_8b_q4nx), and a folder
// quantizing its reference on load (qwen25_3b_q4), beside a bf16 folder.
func quantTree(t *testing.T) string {
	llms := t.TempDir()
	for rel, content := range map[string]string{
		"llama32_1b/verify_adapter.py":     `MODEL_CHOICES = {"base": "meta-llama/Llama-3.2-1B", "instruct": "meta-llama/Llama-3.2-1B-Instruct"}`,
		"llama32_1b/llama32_1b_weights.py": phase0Module,
		"llama32_1b_q4nx/verify_adapter.py": "MODEL_CHOICES = {\n    \"base\": \"meta-llama/Llama-3.2-1B\",\n    \"instruct\": \"meta-llama/Llama-3.2-1B-Instruct\",  # ref\n}\n" +
			"Q4NX_MODEL_SOURCE = os.environ.get(\"Q4NX_MODEL_SOURCE\", \"FastFlowLM/Llama-3.2-1B-NPU2\")\n",
		"llama32_1b_q4nx/llama32_1b_q4nx_weights.py": "D = 2048\n\n\nclass Q4nxModel:\n    def __init__(self, model):\n        pass\n\n    def layer_weights(self, k, dims=None):\n        pass\n",
		"llama31_8b_q4nx/verify_adapter.py":          "MODEL_CHOICES = {\n    \"base\": \"NousResearch/Meta-Llama-3.1-8B\",\n    \"instruct\": \"NousResearch/Meta-Llama-3.1-8B-Instruct\",\n}\n",
		"llama31_8b_q4nx/llama31_8b_q4nx_weights.py": "HF_REPO = \"NousResearch/Meta-Llama-3.1-8B-Instruct\"\nQ4NX_REPO = \"FastFlowLM/Llama-3.1-8B-NPU2\"\n\n\ndef load_q4nx_weights(model_source=None, config=None):\n    pass\n",
		"qwen25_3b_q4/verify_adapter.py":             "_REF = 'Qwen/Qwen2.5-3B-Instruct'\nMODEL_CHOICES = {'base': 'Qwen/Qwen2.5-3B', 'instruct': _REF}\n",
		"qwen25_3b_q4/qwen25_3b_q4_weights.py":       "class Qwen25Q4Model:\n    def layer_rms(self, k):\n        pass\n\n\ndef load_q4_weights(model=None, config=None):\n    pass\n",
		"smolvla/verify_adapter.py":                  `MODEL_CHOICES = {"base": "lerobot/smolvla_base"}`,
		"smolvla/smolvla_weights.py":                 "def helper():\n    pass\n",
	} {
		testenv.WriteFile(t, filepath.Join(llms, filepath.FromSlash(rel)), content)
	}
	return llms
}

func TestQuantizedFolders(t *testing.T) {
	folders, err := Scan(quantTree(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*Quantized{}
	for _, f := range folders {
		if f.Quant != nil {
			got[f.Name] = f.Quant
		}
		if f.Phase0 && f.Quant != nil {
			t.Errorf("%s: both a Phase 0 and a quantized folder", f.Name)
		}
	}
	want := map[string]*Quantized{
		"llama32_1b_q4nx": {Module: "llama32_1b_q4nx_weights.py", Loader: "class Q4nxModel",
			Choices: []Choice{{"base", "meta-llama/Llama-3.2-1B"}, {"instruct", "meta-llama/Llama-3.2-1B-Instruct"}}, Bundles: []string{"FastFlowLM/Llama-3.2-1B-NPU2"}},
		"llama31_8b_q4nx": {Module: "llama31_8b_q4nx_weights.py", Loader: "load_q4nx_weights()",
			Choices: []Choice{{"base", "NousResearch/Meta-Llama-3.1-8B"}, {"instruct", "NousResearch/Meta-Llama-3.1-8B-Instruct"}}, Bundles: []string{"FastFlowLM/Llama-3.1-8B-NPU2"}},
		"qwen25_3b_q4": {Module: "qwen25_3b_q4_weights.py", Loader: "load_q4_weights()",
			Choices: []Choice{{"base", "Qwen/Qwen2.5-3B"}, {"instruct", "Qwen/Qwen2.5-3B-Instruct"}}},
	}
	if !reflect.DeepEqual(got, want) {
		for k := range want {
			t.Errorf("%s: got %+v, want %+v", k, got[k], want[k])
		}
	}
	// The bf16 folder is still the one Lookup finds for the reference id.
	if own, err := Lookup(folders, "meta-llama/Llama-3.2-1B"); err != nil || own != "llama32_1b" {
		t.Errorf("Lookup = %q, %v; want llama32_1b", own, err)
	}
}

func TestQuantizedUses(t *testing.T) {
	folders, err := Scan(quantTree(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := func(uses []Use) []string {
		var out []string
		for _, u := range uses {
			out = append(out, u.Folder+":"+u.Key+":"+u.Reference+":"+u.Bundle)
		}
		return out
	}
	for _, c := range []struct {
		id, name string
		want     []string
	}{
		{"FastFlowLM/Llama-3.2-1B-NPU2", "", []string{"llama32_1b_q4nx:base:meta-llama/Llama-3.2-1B:FastFlowLM/Llama-3.2-1B-NPU2", "llama32_1b_q4nx:instruct:meta-llama/Llama-3.2-1B-Instruct:FastFlowLM/Llama-3.2-1B-NPU2"}},
		{"fastflowlm/llama-3.2-1b-npu2", "", []string{"llama32_1b_q4nx:base:meta-llama/Llama-3.2-1B:fastflowlm/llama-3.2-1b-npu2", "llama32_1b_q4nx:instruct:meta-llama/Llama-3.2-1B-Instruct:fastflowlm/llama-3.2-1b-npu2"}},
		{"meta-llama/Llama-3.2-1B-Instruct", "llama32_1b_q4nx", []string{"llama32_1b_q4nx:instruct:meta-llama/Llama-3.2-1B-Instruct:FastFlowLM/Llama-3.2-1B-NPU2"}},
		{"meta-llama/Llama-3.2-1B-Instruct", "llama32_1b", nil},
		{"Qwen/Qwen2.5-3B-Instruct", "qwen25_3b_q4", []string{"qwen25_3b_q4:instruct:Qwen/Qwen2.5-3B-Instruct:"}},
		{"FastFlowLM/Llama-3.1-8B-NPU2", "", []string{"llama31_8b_q4nx:base:NousResearch/Meta-Llama-3.1-8B:FastFlowLM/Llama-3.1-8B-NPU2", "llama31_8b_q4nx:instruct:NousResearch/Meta-Llama-3.1-8B-Instruct:FastFlowLM/Llama-3.1-8B-NPU2"}},
	} {
		if got := keys(QuantizedUses(folders, c.id, c.name)); !slices.Equal(got, c.want) {
			t.Errorf("QuantizedUses(%s, %q) = %q, want %q", c.id, c.name, got, c.want)
		}
	}
}

// TestQuantizedRealTree reads upstream's own tree when PHASE0_MLIR_AIR names
// its programming_examples (as the pytests read it; a checkout's root, with
// programming_examples under it, is taken too): its nine quantized folders,
// Gemma 3's and Phi-4-mini's among them, each with its references and
// bundle.
func TestQuantizedRealTree(t *testing.T) {
	root := os.Getenv("PHASE0_MLIR_AIR")
	if root == "" {
		t.Skip("PHASE0_MLIR_AIR is not set: no fetched mlir-air tree to read")
	}
	llms := filepath.Join(root, "llms")
	if _, err := os.Stat(llms); err != nil {
		llms = filepath.Join(root, "programming_examples", "llms")
	}
	folders, err := Scan(llms, []string{"verify", "shared", "bench"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range folders {
		if q := f.Quant; q != nil {
			got[f.Name] = q.Loader + " " + q.References()[0] + " " + firstOr(q.Bundles)
		}
	}
	want := map[string]string{
		"llama32_1b_q4nx": "class Q4nxModel meta-llama/Llama-3.2-1B FastFlowLM/Llama-3.2-1B-NPU2",
		"llama32_3b_q4nx": "load_q4nx_weights() meta-llama/Llama-3.2-3B FastFlowLM/Llama-3.2-3B-NPU2",
		"llama31_8b_q4nx": "load_q4nx_weights() NousResearch/Meta-Llama-3.1-8B FastFlowLM/Llama-3.1-8B-NPU2",
		"qwen3_8b_q4nx":   "load_q4nx_weights() Qwen/Qwen3-8B FastFlowLM/Qwen3-8B-NPU2",
		"qwen25_7b_q4nx":  "load_q4nx_weights() Qwen/Qwen2.5-7B-Instruct ",
		"qwen25_3b_q4":    "load_q4_weights() Qwen/Qwen2.5-3B ",
		"llama32_1b_int4": "load_weights_awq() amd/Llama-3.2-1B-Instruct-awq-uint4-asym-g128-bf16-lmhead ",
		"gemma3_4b_q4nx":  "class Q4nxModel unsloth/gemma-3-4b-it FastFlowLM/Gemma3-4B-NPU2",
		"phi4_mini_q4nx":  "load_q4nx_weights() microsoft/Phi-4-mini-instruct FastFlowLM/Phi4-mini-Instruct-NPU2",
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %q, want %q", name, got[name], w)
		}
	}
}

func firstOr(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
