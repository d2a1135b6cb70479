package orchestrator

import (
	"context"

	"phase0/gate/baseline"
	"phase0/gate/config"
	"phase0/gate/preflight"
	"phase0/gate/quant"
	"phase0/gate/verdict"
	"phase0/gate/weights"
	"phase0/output/report"
	"phase0/read/model"
	"phase0/run/reuse"
	"phase0/run/wsfolder"
)

// The stage table: each stage's name, when it applies, its function, and
// where its result is kept. It is the only code that writes a state's facts
// and sections; a stage function reads the state and returns.
var (
	stepLLMsDir  = check("llms_dir", llmsDirStage)
	stepOut      = check("out", outStage)
	stepReuse    = produce("reuse", reuseStage, func(st *state, r reuseResult) { st.facts.reuse = r })
	stepEnter    = check("enter", enterStage).onlyIf(reusedMidDeployment).afterAnswering()
	stepPython   = check("python", pythonStage)
	stepResolve  = produce("resolve", resolveStage, func(st *state, m *resolvedModel) { st.facts.model = m })
	stepConfig   = produce("config", configStage, func(st *state, a *model.Analysis) { st.facts.analysis = a })
	stepWeights  = produce("weights", weightsStage, keepWeights)
	stepScan     = produce("scan", scanStage, func(st *state, w *weights.Result) { st.sections.scanned = w }).onlyIf(hasInventory)
	stepMemory   = produce("memory", memoryStage, func(st *state, m *memoryVerdict) { st.facts.memory = m }).onlyIf(memoryApplies)
	stepGenerate = produce("generate", generateStage, func(st *state, w *workspace) { st.facts.workspace = w })

	stepPythonWeights = produce("python_weights", pythonWeightsStage, func(st *state, r loaded) {
		st.sections.loader, st.facts.tie = r.loader, r.tie
	}).onlyIf(pythonReady)
	stepConfigFacts = produce("config_facts", configFactsStage, func(st *state, c *config.Consistency) {
		st.sections.consistency = c
	}).onlyIf(pythonReady)
	stepHFBaseline = produce("hf_baseline", hfBaselineStage, func(st *state, b *baseline.Baseline) {
		st.sections.baseline = b
	}).onlyIf(pythonReady)
	stepReference = produce("reference", referenceStage, func(st *state, r *report.Reference) {
		st.sections.reference = r
	}).onlyIf(referenceApplies)
	stepMachine = produce("machine", machineStage, func(st *state, p *preflight.Report) { st.sections.machine = p })
	// record_inputs stamps what the verdict depended on; record writes it
	// (inputs.json) with the report, in one commit (record.go).
	stepRecordInputs = produce("record_inputs", recordInputsStage, func(st *state, in *reuse.Record) { st.facts.inputs = in })
	stepRecord       = produce("record", recordStage, func(st *state, r *recorded) { st.facts.recorded = r })

	// A quantized folder's key (quant.go).
	stepRoute       = check("route", routeStage)
	stepQuantFolder = produce("quant_folder", quantFolderStage, func(st *state, r quantResult) {
		st.facts.quant, st.facts.workspace = r.folder, r.ws
	})
	stepQuantReuse    = produce("quant_reuse", quantReuseStage, func(st *state, r reuseResult) { st.facts.reuse = r })
	stepQuantWeights  = produce("quant_weights", quantWeightsStage, func(st *state, w *quant.Weights) { st.sections.quantWeights = w })
	stepQuantConfig   = produce("quant_config", quantConfigStage, func(st *state, c *quant.Constants) { st.sections.quantConfig = c })
	stepPairing       = produce("pairing", pairingStage, func(st *state, p *quant.Pairing) { st.sections.pairing = p })
	stepQuantBaseline = produce("quant_baseline", quantBaselineStage, func(st *state, r quantGate2) {
		st.sections.baseline, st.sections.quantE2E = r.baseline, r.e2e
	}).onlyIf(pythonReady) // the bf16 baseline depends on the reference alone
)

// keepWeights keeps the weights stage's three results: the inventory, gate
// 1 from the headers and gate 3's cross-check.
func keepWeights(st *state, r weightsResult) {
	st.facts.checkpoint, st.sections.weights, st.sections.crossCheck = r.checkpoint, r.gate1, r.crossCheck
}

// The commands' stage lists.
var (
	// inspectStages need no Python: resolve, config and architecture gate,
	// inventory with gate 1 and the config-vs-shapes cross-check, optional
	// scan (listed only when --scan is given: withoutSkippedScan).
	inspectStages = []stage{stepResolve, stepConfig, stepWeights, stepScan}
	// runStages are all of Phase 0: inspect, preflight, generate, the
	// Python facts judged as gates 1 and 3, gate 2, and the record.
	runStages = concat([]stage{stepLLMsDir, stepReuse, stepEnter, stepPython}, inspectStages, []stage{stepMemory, stepGenerate,
		stepPythonWeights, stepConfigFacts, stepHFBaseline, stepReference, stepMachine, stepRecordInputs, stepRecord})
	// baselineStages are inspect, the memory preflight and gate 2.
	baselineStages = concat([]stage{stepLLMsDir, stepPython}, inspectStages, []stage{stepMemory, stepHFBaseline})
	// quantStages validate one MODEL_CHOICES key of a quantized folder:
	// the reference is inspected as for a bf16 run (its config, its
	// checkpoint), then the folder's own loader against it (gate 1), its
	// constants (gate 3), the pairing, and the reference's baseline (gate 2).
	// A key whose inputs are unchanged reuses its recorded verdict
	// (quant_reuse, under the key's lock), as a bf16 run does: before any
	// Python starts and before the scan reads every byte of the reference.
	quantStages = []stage{stepLLMsDir, stepResolve, stepConfig, stepWeights, stepQuantFolder, stepQuantReuse, stepPython, stepScan,
		stepQuantWeights.onlyIf(pythonReady), stepQuantConfig, stepPairing, stepMemory, stepQuantBaseline, stepMachine, stepRecordInputs, stepRecord}
	// referenceStages are `phase0 reference`: inspect, then the recording.
	// --out is checked first: a folder that cannot take the recording fails
	// before seconds of Python work.
	referenceStages = concat([]stage{stepLLMsDir, stepOut, stepPython}, inspectStages, []stage{stepMemory, stepReference})
)

func concat(lists ...[]stage) []stage {
	var out []stage
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// produce is a stage whose function returns a result; keep says where the
// state holds it for the stages after it and the report. The result is kept
// even when the stage errs: a partial one (a reference that failed to
// record) is what the report shows.
func produce[R any](name string, fn func(context.Context, *state) (R, outcome, error), keep func(*state, R)) stage {
	return stage{name: name, fn: fn, run: func(ctx context.Context, st *state) (outcome, error) {
		r, out, err := fn(ctx, st)
		keep(st, r)
		return out, err
	}}
}

// check is a stage with no result of its own: it checks the settings or the
// machine.
func check(name string, fn func(context.Context, *state) (outcome, error)) stage {
	return stage{name: name, fn: fn, run: fn}
}

// onlyIf makes the stage conditional: when says whether it applies.
func (sg stage) onlyIf(when func(*state) (bool, string)) stage {
	sg.when = when
	return sg
}

// afterAnswering makes the stage complete an answer given early: it runs
// only when an earlier stage answered the command (a reused verdict).
func (sg stage) afterAnswering() stage {
	sg.afterAnswer = true
	return sg
}

// reusedMidDeployment: a reused PASS of a mid-deployment folder phase0 did
// not create, whose entry and tick enter brings up to date (phase0's own
// workspace stamps its TODO.md and progress.md: a reuse there finds them
// as recorded).
func reusedMidDeployment(st *state) (bool, string) {
	r := st.facts.reuse.reused
	if r == nil || r.Status != verdict.Pass || r.Workspace == nil || r.Workspace.RecordDir == "" || r.Config == nil {
		return false, "not a reused PASS of a folder phase0 did not create"
	}
	return wsfolder.MidDeployment(r.Workspace.Dir), "the folder is not mid-deployment"
}

// hasInventory: the scan needs the checkpoint's inventory.
func hasInventory(st *state) (bool, string) { return st.inv() != nil, "no inventory to scan" }

// pass is a passing outcome with its detail.
func pass(detail string) outcome { return outcome{status: verdict.Pass, detail: detail} }
