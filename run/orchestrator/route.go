package orchestrator

import (
	"context"

	"phase0/output/report"
	"phase0/output/scaffold"
	"phase0/read/llmstree"
	"phase0/read/model"
	"phase0/run/chain"
	"phase0/run/reuse"
)

// A route other than the bf16 run's (one quantized key, run/quantkey) runs
// its own stages over its own state, which wraps the run's (RunRoute).

// Key is a quantized key's run as the shared stages see it: its
// MODEL_CHOICES use (the report names it, the record is kept per key), its
// gates, and what its verdict depends on besides a bf16 run's inputs.
type Key interface {
	Use() *llmstree.Use
	QuantGates(g *report.Gates)
	QuantInputs() (*reuse.QuantInputs, error)
}

// State, Workspace and Reuse are the run's state, its workspace and a
// reuse stage's result, as a route's stages name them.
type (
	State     = state
	Workspace = workspace
	Reuse     = reuseResult
)

// RunRoute is `phase0 run arg` through a route's stages; wrap makes the
// route's state of the run's own, and says which key it validates.
func RunRoute[S any](ctx context.Context, s *Settings, arg, version string, wrap func(*State) (S, Key), stages []chain.Stage[S]) *report.Report {
	return runOver(ctx, inputs{s: s, command: "run", arg: arg, version: version}, wrap, stages)
}

// What a route's stages read of the run.
func (st *state) Settings() *Settings       { return st.in.s }
func (st *state) Model() *resolvedModel     { return st.facts.model }
func (st *state) Analysis() *model.Analysis { return st.facts.analysis }

// use is the quantized key's use the run validates (nil for a bf16 run).
func (st *state) use() *llmstree.Use {
	if st.key == nil {
		return nil
	}
	return st.key.Use()
}

// RecordID names the run's record: the model's id, or for a quantized
// folder's key "key=reference", so each MODEL_CHOICES key keeps its own.
func (st *state) RecordID() string {
	if q := st.use(); q != nil {
		return q.Key + "=" + st.facts.model.ID
	}
	return st.facts.model.ID
}

// Foreign takes dir, a folder phase0 did not create, as the run's
// validated workspace: locked for the run, its record outside it under
// recordKey; foreign names what in it is validated and not replaced.
func (st *state) Foreign(dir, name, modelID string, foreign []string, recordKey string) (*Workspace, error) {
	if _, _, err := st.lockWorkspace(dir); err != nil {
		return nil, err
	}
	w := &workspace{dir: dir, spec: scaffold.Spec{Name: name, ModelID: modelID}, foreign: true,
		report: &report.Workspace{Dir: dir, Name: name, Mode: report.ModeValidatedExisting, Written: []string{}, Unchanged: []string{}, Kept: []string{},
			Foreign: foreign, Swept: []string{}, HelpersKept: []string{}}}
	var err error
	if w.report.RecordDir, err = st.in.s.Places().OutsideRecord(dir, recordKey); err != nil {
		return nil, err
	}
	return w, nil
}
