package quantkey

import (
	"phase0/gate/quant"
	"phase0/run/chain"
	"phase0/run/orchestrator"
)

// The stage table: each stage's name, when it applies, its function, and
// where its result is kept. It is the only code that writes a key's facts
// and sections, and the only code that hands the run's own state what a
// key's stage learned about the run as a whole (its workspace, its reuse
// decision: KeepWorkspace, KeepReuse).
var (
	stepQuantFolder = chain.Produce("quant_folder", quantFolderStage, func(k *keyState, r folderResult) {
		k.facts.folder = r.folder
		k.core.KeepWorkspace(r.ws)
	})
	stepQuantReuse   = chain.Produce("quant_reuse", quantReuseStage, func(k *keyState, r orchestrator.Reuse) { k.core.KeepReuse(r) })
	stepQuantWeights = chain.Produce("quant_weights", quantWeightsStage, func(k *keyState, w *quant.Weights) {
		k.sections.weights = w
	}).OnlyIf(pythonReady)
	stepQuantConfig = chain.Produce("quant_config", quantConfigStage, func(k *keyState, c *quant.Constants) { k.sections.config = c })
	stepPairing     = chain.Produce("pairing", pairingStage, func(k *keyState, p *quant.Pairing) { k.sections.pairing = p })
	stepQuantBase   = chain.Produce("quant_baseline", quantBaselineStage, func(k *keyState, r gate2) {
		k.sections.baseline, k.sections.e2e = r.baseline, r.e2e
	}).OnlyIf(pythonReady) // the bf16 baseline depends on the reference alone
)

// quantStages validate one MODEL_CHOICES key of a quantized folder: the
// reference is inspected as for a bf16 run (its config, its checkpoint),
// then the folder's own loader against it (gate 1), its constants (gate
// 3), the pairing, and the reference's baseline (gate 2). A key whose
// inputs are unchanged reuses its recorded verdict (quant_reuse, under the
// key's lock), as a bf16 run does: before any Python starts and before the
// scan reads every byte of the reference.
var quantStages = []chain.Stage[*keyState]{shared(orchestrator.StepLLMsDir), shared(orchestrator.StepResolve), shared(orchestrator.StepConfig),
	shared(orchestrator.StepWeights), stepQuantFolder, stepQuantReuse, shared(orchestrator.StepPython), shared(orchestrator.StepScan),
	stepQuantWeights, stepQuantConfig, stepPairing, shared(orchestrator.StepMemory), stepQuantBase, shared(orchestrator.StepMachine),
	shared(orchestrator.StepRecordInputs), shared(orchestrator.StepRecord)}

// shared is a stage of the bf16 run's state run over a key's.
func shared(sg chain.Stage[*orchestrator.State]) chain.Stage[*keyState] {
	return chain.Lift(sg, func(k *keyState) *orchestrator.State { return k.core })
}

// pythonReady: the Python stages apply (orchestrator.PythonReady).
func pythonReady(k *keyState) (bool, string) { return orchestrator.PythonReady(k.core) }
