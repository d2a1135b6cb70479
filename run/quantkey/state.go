// Package quantkey validates one MODEL_CHOICES key of a quantized folder
// of the mlir-air tree (llama32_1b_q4nx …): the folder's own loader against
// its source checkpoint (quantized gate 1), its constants against config.json
// (gate 3), its pairing against the bundle's declared source, and the
// reference's bf16 baseline with the folder's tensors patched in (gate 2).
// Its stages run over its own state, which wraps the bf16 run's
// (orchestrator.RunRoute); the shared stages (resolve, config, weights,
// scan, memory, python, the record …) are lifted onto it. The folder is
// upstream's: nothing is written into it (wsfolder.Places).
package quantkey

import (
	"context"

	"phase0/gate/baseline"
	"phase0/gate/quant"
	"phase0/gate/quantfolder"
	"phase0/output/report"
	"phase0/read/llmstree"
	"phase0/run/chain"
	"phase0/run/orchestrator"
	"phase0/run/reuse"
)

// keyState is one key's run, in the bf16 run's three parts: in (the key,
// the version), facts, sections. The stage table (stages.go) is the only
// code that writes facts or sections (TestStagesWriteOnlyTheirResults);
// what the shared stages learn stays in the run's own state (core).
type keyState struct {
	core     *orchestrator.State
	in       inputs
	facts    facts
	sections sections
}

// inputs are the key this run validates (the folder, the MODEL_CHOICES
// key, its reference and the bundle) and phase0's version.
type inputs struct {
	use     *llmstree.Use
	version string
}

// facts are what the key's stages learned that later stages read.
type facts struct {
	folder *quantfolder.Folder // quant_folder: the quantized folder's module, format and bundle
}

// sections are the key's judged parts, each the result of one stage.
type sections struct {
	weights  *quant.Weights     // quant_weights: quantized gate 1
	config   *quant.Constants   // quant_config: quantized gate 3
	pairing  *quant.Pairing     // pairing: the key's reference vs the bundle's declared source
	baseline *baseline.Baseline // quant_baseline: the reference's bf16 baseline (gate 2)
	e2e      *quant.EndToEnd    // quant_baseline: quantized gate 2
}

// Run validates each of uses (the MODEL_CHOICES keys modelArg names), one
// chain per key; the first report stands for the command and carries the
// others (each also recorded on its own).
func Run(ctx context.Context, s *orchestrator.Settings, modelArg, version string, uses []llmstree.Use) *report.Report {
	var reports []*report.Report
	for i := range uses {
		r := runKey(ctx, s, &uses[i], version, quantStages)
		r.Model = modelArg
		reports = append(reports, r)
	}
	return report.WithKeys(reports)
}

// runKey runs stages for the key u: `phase0 run <its reference>` as the
// key's own chain.
func runKey(ctx context.Context, s *orchestrator.Settings, u *llmstree.Use, version string, stages []chain.Stage[*keyState]) *report.Report {
	return orchestrator.RunRoute(ctx, s, u.Reference, version, func(core *orchestrator.State) (*keyState, orchestrator.Key) {
		k := &keyState{core: core, in: inputs{use: u, version: version}}
		return k, k
	}, stages)
}

// Use is the key the run validates (orchestrator.Key).
func (k *keyState) Use() *llmstree.Use { return k.in.use }

// QuantGates puts the key's gates in the report's: the four quantized
// ones, and its bf16 baseline as gate 2 when quant_baseline ran (else the
// memory stage's refusal stands for it).
func (k *keyState) QuantGates(g *report.Gates) {
	g.QuantWeights, g.QuantConfig, g.Pairing, g.QuantE2E = k.sections.weights, k.sections.config, k.sections.pairing, k.sections.e2e
	if k.sections.baseline != nil {
		g.HFBaseline = k.sections.baseline
	}
}

// QuantInputs stamps what the key's verdict depends on besides a bf16
// run's inputs (reuse.StampQuant), the reference's own bf16 record where
// bf16Record looks for it.
func (k *keyState) QuantInputs() (*reuse.QuantInputs, error) {
	s, q, ref := k.core.Settings(), k.facts.folder, k.core.Model()
	bf16 := *s
	bf16.Name = ""
	ws, err := bf16.Places().Workspace(ref.ID)
	if err != nil {
		return nil, err
	}
	reports, err := bf16.Places().Reports(ws, ref.ID)
	if err != nil {
		return nil, err
	}
	candidates := map[string]string{}
	for _, c := range q.Candidates {
		candidates[c.ID] = c.Dir
	}
	return reuse.StampQuant(q.Use, q.Source, candidates, s.LookupEnv, reports)
}
