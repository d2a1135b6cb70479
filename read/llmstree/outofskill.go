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
// (docs/quantized.md, a list run through a tree: the ids smolvla uses are
// REJECTED, from the folder when their config.json is not cached). gemma3_4b_q4nx and
// phi4_mini_q4nx are not among them: their families cannot be brought up
// new, but the deployments are validated as quantized folders (issue 38;
// read/model's deployed families). Their ids are listed in
// hf_models.txt beside the in-skill ones; when a line's config.json is not
// in the HF cache, the folder that uses it says why it is out of scope.
// The codes are model/'s (unsupported_architecture).
var outOfSkill = map[string][]Reason{
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
