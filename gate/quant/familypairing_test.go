package quant

import (
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/read/llmstree"
)

// The Gemma bundle's card names google's repo; the folder's key names
// unsloth's licence-free mirror of it: the same checkpoint. A card naming
// the other family's model FAILs the pairing naming both.
func TestPairingDeployedFamilies(t *testing.T) {
	gemma := llmstree.Use{Folder: "gemma3_4b_q4nx", Key: "instruct", Reference: "unsloth/gemma-3-4b-it", Bundle: "FastFlowLM/Gemma3-4B-NPU2",
		Choices: []llmstree.Choice{{Key: "instruct", Reference: "unsloth/gemma-3-4b-it"}}}
	if p := CheckPairing(gemma, "google/gemma-3-4b-it", nil); p.Status != verdict.Pass || !strings.Contains(p.Summary, "declares base_model google/gemma-3-4b-it, the key's reference unsloth/gemma-3-4b-it") {
		t.Errorf("gemma: %s %q", p.Status, p.Summary)
	}
	phi := llmstree.Use{Folder: "phi4_mini_q4nx", Key: "base", Reference: "microsoft/Phi-4-mini-instruct", Bundle: "FastFlowLM/Phi4-mini-Instruct-NPU2",
		Choices: []llmstree.Choice{{Key: "base", Reference: "microsoft/Phi-4-mini-instruct"}, {Key: "instruct", Reference: "microsoft/Phi-4-mini-instruct"}}}
	if p := CheckPairing(phi, "microsoft/Phi-4-mini-instruct", nil); p.Status != verdict.Pass {
		t.Errorf("phi base key (Phi-4-mini ships only the instruct checkpoint): %s %q", p.Status, p.Summary)
	}
	if p := CheckPairing(gemma, "microsoft/Phi-4-mini-instruct", nil); p.Status != verdict.Fail || !strings.Contains(p.Summary, "declares base_model microsoft/Phi-4-mini-instruct") {
		t.Errorf("gemma bundle declaring phi: %s %q", p.Status, p.Summary)
	}
}
