package orchestrator

import (
	"context"
	"fmt"
	"path/filepath"

	"phase0/read/llmstree"
)

// llmsDirStage checks, before anything is read or written, that --llms-dir
// is an mlir-air programming_examples/llms tree. A typo or the repository
// root must not quietly fall back to the bundled runner and put the
// workspace in the wrong folder; the bundled runner is only for runs
// without a tree.
func llmsDirStage(_ context.Context, st *state) (outcome, error) {
	s := st.in.s
	if s.LLMSDir == "" {
		return pass(fmt.Sprintf("no llms tree: bundled runner, workspaces under %s", s.Places().Root())), nil
	}
	if s.OutDir != "" {
		return outcome{}, fmt.Errorf("out_dir %s and llms_dir %s are both set: with an llms tree the workspace is <llms_dir>/<name>; drop one of them", s.OutDir, s.LLMSDir)
	}
	llms, err := filepath.Abs(s.LLMSDir)
	if err != nil {
		return outcome{}, fmt.Errorf("llms_dir %s: %w", s.LLMSDir, err)
	}
	if err := llmstree.CheckTree(llms); err != nil {
		return outcome{}, err
	}
	if err := llmstree.RunnerShadow(llms); err != nil {
		return outcome{}, err
	}
	return pass(llms), nil
}
