package quant

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/read/llmstree"
	"phase0/read/model"
)

func deployedAnalysis(t *testing.T, file string) *model.Analysis {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "read", "model", "testdata", "configs", file))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := model.ParseRaw(data)
	if err != nil {
		t.Fatal(err)
	}
	return model.AnalyzeDeployed(raw)
}

// A bundle of one family paired with a reference of the other is refused
// before any tensor is read, naming both; the right pairings pass.
func TestFamilyMismatch(t *testing.T) {
	gemma, phi, llama := deployedAnalysis(t, "gemma-3-4b-it.json"), deployedAnalysis(t, "phi-4-mini-instruct.json"), deployedAnalysis(t, "llama-3.2-1b.json")
	use := func(folder, ref string) *llmstree.Use {
		return &llmstree.Use{Folder: folder, Key: "instruct", Reference: ref}
	}
	for _, c := range []struct {
		u    *llmstree.Use
		a    *model.Analysis
		want string
	}{
		{use("gemma3_4b_q4nx", "unsloth/gemma-3-4b-it"), gemma, ""},
		{use("phi4_mini_q4nx", "microsoft/Phi-4-mini-instruct"), phi, ""},
		{use("llama32_1b_q4nx", "meta-llama/Llama-3.2-1B"), llama, ""},
		{use("gemma3_4b_q4nx", "microsoft/Phi-4-mini-instruct"), phi, "gemma3_4b_q4nx deploys Gemma3ForConditionalGeneration, but key \"instruct\"'s reference microsoft/Phi-4-mini-instruct is Phi3ForCausalLM"},
		{use("phi4_mini_q4nx", "meta-llama/Llama-3.2-1B"), llama, "phi4_mini_q4nx deploys Phi3ForCausalLM, but key \"instruct\"'s reference meta-llama/Llama-3.2-1B is LlamaForCausalLM"},
		{use("llama32_1b_q4nx", "unsloth/gemma-3-4b-it"), gemma, "a Gemma3ForConditionalGeneration reference, which only the tree's gemma3_4b_q4nx folder deploys"},
	} {
		err := FamilyMismatch(c.u, c.a)
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s with %s: %v, want %q", c.u.Folder, c.u.Reference, err, c.want)
		}
	}
}
