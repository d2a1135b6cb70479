package orchestrator

import (
	"phase0/gate/baseline"
	"phase0/gate/config"
	"phase0/gate/preflight"
	"phase0/gate/verdict"
	"phase0/gate/weights"
	"phase0/output/report"
	"phase0/read/model"
	"phase0/run/chain"
	"phase0/run/reuse"
	"phase0/run/wsfolder"
)

// The stage table: each stage's name, when it applies, its function, and
// where its result is kept. It is the only code that writes a state's facts
// and sections; a stage function reads the state and returns.
var (
	StepLLMsDir  = chain.Check("llms_dir", llmsDirStage)
	stepOut      = chain.Check("out", outStage)
	stepReuse    = chain.Produce("reuse", reuseStage, func(st *state, r reuseResult) { st.facts.reuse = r })
	stepEnter    = chain.Check("enter", enterStage).OnlyIf(reusedMidDeployment).AfterAnswering()
	StepPython   = chain.Check("python", pythonStage)
	StepResolve  = chain.Produce("resolve", resolveStage, func(st *state, m *resolvedModel) { st.facts.model = m })
	StepConfig   = chain.Produce("config", configStage, func(st *state, a *model.Analysis) { st.facts.analysis = a })
	StepWeights  = chain.Produce("weights", weightsStage, keepWeights)
	StepScan     = chain.Produce("scan", scanStage, func(st *state, w *weights.Result) { st.sections.scanned = w }).OnlyIf(hasInventory)
	StepMemory   = chain.Produce("memory", memoryStage, func(st *state, m *memoryVerdict) { st.facts.memory = m }).OnlyIf(memoryApplies)
	stepGenerate = chain.Produce("generate", generateStage, func(st *state, w *workspace) { st.facts.workspace = w })

	stepPythonWeights = chain.Produce("python_weights", pythonWeightsStage, func(st *state, r loaded) {
		st.sections.loader, st.facts.tie = r.loader, r.tie
	}).OnlyIf(PythonReady)
	stepConfigFacts = chain.Produce("config_facts", configFactsStage, func(st *state, c *config.Consistency) {
		st.sections.consistency = c
	}).OnlyIf(PythonReady)
	stepHFBaseline = chain.Produce("hf_baseline", hfBaselineStage, func(st *state, b *baseline.Baseline) {
		st.sections.baseline = b
	}).OnlyIf(PythonReady)
	stepReference = chain.Produce("reference", referenceStage, func(st *state, r *report.Reference) {
		st.sections.reference = r
	}).OnlyIf(referenceApplies)
	StepMachine = chain.Produce("machine", machineStage, func(st *state, p *preflight.Report) { st.sections.machine = p })
	// record_inputs stamps what the verdict depended on; record writes it
	// (inputs.json) with the report, in one commit (record.go).
	StepRecordInputs = chain.Produce("record_inputs", recordInputsStage, func(st *state, in *reuse.Record) { st.facts.inputs = in })
	StepRecord       = chain.Produce("record", recordStage, func(st *state, r *recorded) { st.facts.recorded = r })
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
	inspectStages = []stage{StepResolve, StepConfig, StepWeights, StepScan}
	// runStages are all of Phase 0: inspect, preflight, generate, the
	// Python facts judged as gates 1 and 3, gate 2, and the record.
	runStages = concat([]stage{StepLLMsDir, stepReuse, stepEnter, StepPython}, inspectStages, []stage{StepMemory, stepGenerate,
		stepPythonWeights, stepConfigFacts, stepHFBaseline, stepReference, StepMachine, StepRecordInputs, StepRecord})
	// baselineStages are inspect, the memory preflight and gate 2.
	baselineStages = concat([]stage{StepLLMsDir, StepPython}, inspectStages, []stage{StepMemory, stepHFBaseline})
	// referenceStages are `phase0 reference`: inspect, then the recording.
	// --out is checked first: a folder that cannot take the recording fails
	// before seconds of Python work.
	referenceStages = concat([]stage{StepLLMsDir, stepOut, StepPython}, inspectStages, []stage{StepMemory, stepReference})
)

func concat(lists ...[]stage) []stage {
	var out []stage
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// KeepWorkspace and KeepReuse keep what a route's stage learned about the
// run as a whole (the folder a quantized key validates, its reuse
// decision): called only by the route's stage table (run/quantkey).
func (st *state) KeepWorkspace(w *workspace) { st.facts.workspace = w }
func (st *state) KeepReuse(r reuseResult)    { st.facts.reuse = r }

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
func pass(detail string) outcome { return outcome{Status: verdict.Pass, Detail: detail} }
