package orchestrator

import (
	"context"
	"fmt"
	"time"

	"phase0/gate/baseline"
	"phase0/gate/config"
	"phase0/gate/preflight"
	"phase0/gate/verdict"
	"phase0/gate/weights"
	"phase0/internal/atomicfile"
	"phase0/internal/wslock"
	"phase0/output/report"
	"phase0/output/scaffold"
	"phase0/python/ops"
	"phase0/read/model"
	"phase0/read/safetensors"
	"phase0/run/chain"
	"phase0/run/reuse"
	"phase0/wire"
)

// state is one command's run, in three parts, each written in one place:
//
//   - in: what the command was given; no stage writes it.
//   - facts: what the stages learned that later stages read (the model, its
//     analysis and checkpoint, the workspace, the reuse stamp).
//   - sections: what the gates and checks judged, which the report shows.
//
// A stage function reads the state and returns its result; the stage
// table (stages.go) says where each result is kept, and that is the only
// code that writes facts or sections (TestStagesWriteOnlyTheirResults).
// The chain's own bookkeeping (the stages run, warnings, the error, the
// worker and the workspace locks) belongs to the engine below.
type state struct {
	in       inputs
	facts    facts
	sections sections

	key      Key            // the quantized key the run validates (route.go), nil for a bf16 run
	client   *ops.Client    // the Python worker, started by the first op a stage runs
	locks    []*wslock.Lock // workspace locks, held to the end of the run
	created  []string       // the folders made for the workspace, outermost first: removed if the run ends without a verdict
	warnings []string
	stages   []report.Stage
	err      error // could not evaluate (or interrupted): the chain stopped here
}

// inputs are what the command was given.
type inputs struct {
	s       *Settings
	command string
	arg     string
	version string
	started time.Time
}

// facts are the stages' findings that later stages read, each the result
// of the stage named beside it.
type facts struct {
	reuse      reuseResult     // reuse: the inputs stamped before the run, and a verdict to reuse
	model      *resolvedModel  // resolve: the checkpoint's folder (its files in model.FS)
	analysis   *model.Analysis // config: the architecture gate and the extracted Config
	checkpoint *checkpoint     // weights: the tensor inventory
	memory     *memoryVerdict  // memory: the estimate and, when too small, the refusal
	workspace  *workspace      // generate: <name>/, its spec and what was written
	tie        *wire.TieFacts
	inputs     *reuse.Record // record_inputs: inputs.json, written with the record (nil: a verdict not to reuse)
	recorded   *recorded     // record: where the report was written
}

// sections are the report's judged parts, each the result of one stage.
// Gates 1 and 3 are judged in two steps; the later step's section, when it
// ran, completes the earlier one (gate1, gate3).
type sections struct {
	weights     *weights.Result     // weights: gate 1 from the headers
	scanned     *weights.Result     // scan: gate 1 with every tensor byte read
	crossCheck  *config.Consistency // weights: gate 3, config.json against the shapes
	consistency *config.Consistency // config_facts: gate 3 with the module and transformers
	loader      *weights.Loader     // python_weights: gate 1 through the generated loader
	baseline    *baseline.Baseline  // hf_baseline (or a quantized key's quant_baseline): gate 2
	reference   *report.Reference   // reference: the recorded reference
	machine     *preflight.Report   // machine: readiness for the later phases
}

// checkpoint is the weights stage's fact: the inventory, and the
// architecture rules only the tensor names can decide.
type checkpoint struct {
	inv        *safetensors.Inventory
	rejections []model.Rejection
}

// memoryVerdict is the memory stage's result: the estimate, and the gate 2
// FAIL that stands in for the baseline when the machine is too small.
type memoryVerdict struct {
	need    preflight.Memory
	refusal *baseline.Baseline
}

// workspace is the generate stage's result: the folder, the spec its files
// were rendered from, and what was written.
type workspace struct {
	dir     string
	spec    scaffold.Spec
	report  *report.Workspace
	foreign bool // a folder phase0 did not create: its lock and record live outside it (wsfolder.Places)
}

// recorded is the record stage's result: where the reports went, and what
// it entered in a folder phase0 did not create (workspace-relative).
type recorded struct {
	json, md string
	entered  []string
}

// inv is the checkpoint's inventory (nil before the weights stage, or when
// the checkpoint could not be read).
func (st *state) inv() *safetensors.Inventory {
	if st.facts.checkpoint == nil {
		return nil
	}
	return st.facts.checkpoint.inv
}

// gate1 is the weights gate: the scan's section when it ran, else the
// headers' section.
func (st *state) gate1() *weights.Result {
	if st.sections.scanned != nil {
		return st.sections.scanned
	}
	return st.sections.weights
}

// gate3 is the config-consistency gate: completed by config_facts when it
// ran, else the weights stage's cross-check.
func (st *state) gate3() *config.Consistency {
	if st.sections.consistency != nil {
		return st.sections.consistency
	}
	return st.sections.crossCheck
}

// gate2 is the HF baseline: the hf_baseline stage's section, or the memory
// stage's refusal that stands for it.
func (st *state) gate2() *baseline.Baseline {
	if st.sections.baseline != nil {
		return st.sections.baseline
	}
	if m := st.facts.memory; m != nil {
		return m.refusal
	}
	return nil
}

// outcome is a stage's outcome, stage a stage over the run's own state
// (package chain).
type (
	outcome = chain.Outcome
	stage   = chain.Stage[*state]
)

// runChain runs the stages in order until one errors, the model is
// rejected, a stage answers the command, or the context ends, then builds
// the report.
func runChain(ctx context.Context, s *Settings, command, arg, version string, stages []stage) *report.Report {
	return runOver(ctx, inputs{s: s, command: command, arg: arg, version: version}, func(st *state) (*state, Key) { return st, nil }, stages)
}

// runOver runs stages over the state S that wrap makes of the run's own
// state (and the quantized key S stands for, nil for none): the engine's
// bookkeeping, the report and its status stay the run's own.
func runOver[S any](ctx context.Context, in inputs, wrap func(*state) (S, Key), stages []chain.Stage[S]) *report.Report {
	begin := time.Now()
	in.started = begin.UTC().Truncate(time.Second)
	st := &state{in: in}
	route, key := wrap(st)
	st.key = key
	defer st.releaseLocks()
	defer st.closeWorker()
	st.err = chain.Run(ctx, route, stages, func(sg report.Stage, warnings []string) {
		st.warnings = append(st.warnings, warnings...)
		st.record(sg)
	})
	if st.err != nil {
		st.discardCreated()
	}
	r := st.report()
	// From the untruncated start: started is whole seconds, and a reused
	// verdict's run takes far less than one.
	r.Seconds = time.Since(begin).Seconds()
	return r
}

// record appends a stage and prints its progress line.
func (st *state) record(sg report.Stage) {
	st.stages = append(st.stages, sg)
	if st.in.s.OnStage != nil {
		st.in.s.OnStage(sg)
	}
	if st.in.s.Progress != nil {
		line := fmt.Sprintf("phase0: %-18s %-8s %7.2fs", sg.Name, sg.Status, sg.Seconds)
		if sg.Detail != "" {
			line += "  " + sg.Detail
		}
		fmt.Fprintln(st.in.s.Progress, line)
	}
}

// holdCreated keeps a workspace lock to the end of the run, and the
// folders the run created for that workspace (outermost first).
func (st *state) holdCreated(l *wslock.Lock, created []string) {
	st.locks = append(st.locks, l)
	st.created = append(st.created, created...)
}

// discardCreated removes the workspace this run created (and the folders
// made for it, if empty) when the run ends without a verdict: an exit 2
// leaves nothing half-written. It runs under the workspace's lock.
func (st *state) discardCreated() {
	if len(st.created) == 0 {
		return
	}
	atomicfile.RemoveCreated(st.created)
	st.warnings = append(st.warnings, fmt.Sprintf("%s, which this run created, was removed: the run could not be evaluated", st.created[len(st.created)-1]))
	st.created = nil
}

// releaseLocks drops the workspace locks at the end of the run.
func (st *state) releaseLocks() {
	for _, l := range st.locks {
		_ = l.Release()
	}
	st.locks = nil
}

// Py is the run's typed ops; the worker session starts on the first op.
func (st *state) Py() *ops.Client {
	if st.client == nil {
		st.client = st.in.s.opsClient()
	}
	return st.client
}

func (st *state) closeWorker() {
	if st.client != nil {
		st.client.Close()
	}
}

// rejections are the architecture gate's reasons: config.json's, then the
// tensor names'.
func (st *state) rejections() []model.Rejection {
	out := []model.Rejection{}
	if a := st.facts.analysis; a != nil {
		out = append(out, a.Rejections...)
	}
	if c := st.facts.checkpoint; c != nil {
		out = append(out, c.rejections...)
	}
	return out
}

// status is the overall verdict: ERROR when the chain stopped on an error,
// REJECTED by the architecture gate, FAIL when any gate failed, else PASS.
func (st *state) status() verdict.Status {
	if st.err != nil {
		return verdict.Error
	}
	if len(st.rejections()) > 0 {
		return verdict.Rejected
	}
	out := verdict.Pass
	for _, g := range st.gates().Rows() {
		if g.Section.Status.Failed() {
			out = verdict.Fail
		}
	}
	return out
}

func (st *state) gates() report.Gates {
	g := report.Gates{Weights: st.gate1(), ConfigConsistency: st.gate3(), PyWeights: st.sections.loader, HFBaseline: st.gate2()}
	if st.key != nil {
		st.key.QuantGates(&g)
	}
	return g
}

// workspaceReport is the workspace section, with where the record went.
func (st *state) workspaceReport() *report.Workspace {
	w := st.facts.workspace
	if w == nil {
		return nil
	}
	if rec := st.facts.recorded; rec != nil {
		out := *w.report
		out.ReportJSON, out.ReportMD = rec.json, rec.md
		if w.foreign {
			out.Entered = rec.entered
		}
		return &out
	}
	return w.report
}

// report renders the state as the report object.
func (st *state) report() *report.Report {
	if st.facts.reuse.reused != nil {
		r := st.reusedReport()
		if st.err != nil { // completing the reused answer failed
			r.Status = verdict.Error
			setError(r, st.err)
		}
		return r
	}
	in := st.in
	r := &report.Report{Tool: "phase0", Version: in.version, Command: in.command, Model: in.arg, Status: st.status(),
		Defaulted: []model.Defaulted{}, Rejections: st.rejections(), Warnings: append([]string{}, st.warnings...),
		Stages: append([]report.Stage{}, st.stages...), Started: in.started, Gates: st.gates(), Workspace: st.workspaceReport(),
		Preflight: st.sections.machine, Reference: st.sections.reference}
	if st.err != nil {
		setError(r, st.err)
	}
	if ref := st.facts.model; ref != nil {
		r.ModelID, r.ModelDir, r.Revision, r.Source = ref.ID, ref.Dir, ref.Revision, ref.Source
	}
	if a := st.facts.analysis; a != nil {
		r.Architecture, r.Config = a.Architecture, a.Config
		if a.Family != nil {
			r.Family = a.Family.Name()
		}
		r.Defaulted = append(r.Defaulted, a.Defaulted...)
		r.Warnings = append(a.Warnings[:len(a.Warnings):len(a.Warnings)], r.Warnings...)
	}
	if q := st.use(); q != nil {
		r.Quantized = &report.QuantizedKey{Folder: q.Folder, Key: q.Key, Reference: q.Reference, Bundle: q.Bundle, Loader: q.Loader}
	}
	r.Seconds = time.Since(in.started).Seconds()
	return r
}
