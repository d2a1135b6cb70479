package llmstree

import (
	"slices"
	"strings"
)

// Reason is why a tree folder's model is outside Phase 0's skill, with the
// rejection code the architecture gate would give its config.json.
type Reason struct {
	Code    string
	Message string
}

// outOfSkill are the tree's folders that deploy models outside the skill
// (SPEC, "Quantized deployments in the tree"). Their ids are listed in
// hf_models.txt beside the in-skill ones; when a line's config.json is not
// in the HF cache, the folder that uses it says why it is out of scope.
// The codes are model/'s (sliding_window, partial_rotary,
// unsupported_architecture).
var outOfSkill = map[string][]Reason{
	"gemma3_4b_q4nx": {
		{"unsupported_architecture", "Gemma3ForCausalLM: GELU-tanh GLU, (1+w) RMSNorms, a scaled embedding; supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM"},
		{"sliding_window", "Gemma3 interleaves 5 local sliding-window attention layers per global one"},
	},
	"phi4_mini_q4nx": {
		{"unsupported_architecture", "Phi3ForCausalLM: fused qkv_proj and gate_up_proj, LongRoPE; supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM"},
		{"partial_rotary", "Phi-4-mini rotates 0.75 of each head (partial_rotary_factor 0.75)"},
	},
	"smolvla": {
		{"unsupported_architecture", "SmolVLA is a vision-language-action policy (a VLM backbone and an action expert), not a decoder-only LLM"},
	},
}

// OutOfSkill returns the out-of-skill folder of the tree that uses id (names
// it, or loads it as a bundle) and why its model is out of scope.
func OutOfSkill(folders []Folder, id string) (string, []Reason, bool) {
	for _, f := range folders {
		reasons, ok := outOfSkill[strings.ToLower(f.Name)]
		if !ok {
			continue
		}
		if f.Names(id) || (f.Quant != nil && slices.ContainsFunc(f.Quant.Bundles, func(b string) bool { return strings.EqualFold(b, id) })) {
			return f.Name, reasons, true
		}
	}
	return "", nil, false
}

// ReferenceOnly returns the first quantized folder that pairs id as a
// MODEL_CHOICES reference, when no Phase 0 (bf16) folder names id: such a
// reference (NousResearch/Meta-Llama-3.1-8B, Qwen/Qwen3-8B) has no folder
// of its own and is validated through the folder that compares against it.
func ReferenceOnly(folders []Folder, id string) (string, bool) {
	if slices.ContainsFunc(folders, func(f Folder) bool { return f.Phase0 && f.Names(id) }) {
		return "", false
	}
	for _, f := range folders {
		if f.Quant != nil && slices.ContainsFunc(f.Quant.Choices, func(c Choice) bool { return strings.EqualFold(c.Reference, id) }) {
			return f.Name, true
		}
	}
	return "", false
}
