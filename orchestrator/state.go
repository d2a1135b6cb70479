package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"phase0/configgate"
	"phase0/internal/wslock"
	"phase0/judge"
	"phase0/model"
	"phase0/ops"
	"phase0/preflight"
	"phase0/report"
	"phase0/safetensors"
	"phase0/scaffold"
	"phase0/verdict"
	"phase0/weights"
)

// errInterrupted marks a run stopped by SIGINT/SIGTERM/SIGHUP: exit 130,
// and nothing recorded.
var errInterrupted = errors.New("interrupted")

// state is everything the stages of one command learn, in the order they
// learn it. Stages read what earlier ones wrote; the report is built from it
// once, at the end.
type state struct {
	s       *Settings
	command string
	arg     string
	version string
	started time.Time

	ref      *resolvedModel
	fsys     fs.FS
	analysis *model.Analysis
	inv      *safetensors.Inventory

	weights     *weights.Result
	consistency *configgate.Consistency
	loader      *weights.Loader
	tie         *configgate.TieFacts // the loader's lm_head against its embed_table, judged in gate 3
	baseline    *judge.Baseline
	reference   *report.Reference // the recorded reference (run, reference)

	wsDir     string
	spec      scaffold.Spec
	workspace *report.Workspace
	lock      *wslock.Lock // held from generate to the end of the run
	// foreign: the workspace is a folder phase0 did not create; its lock
	// and record live outside it (foreign.go).
	foreign bool

	preflight *preflight.Report // machine readiness (run only; informational)
	// memoryRefused: the memory preflight found the machine too small (and
	// no --force), so no Python stage runs; its FAIL is the baseline's.
	memoryRefused bool

	client   *ops.Client    // the Python worker, started by the first op a stage runs
	inputs   *runInputs     // what the verdict depends on, stamped before the run (reuse.go)
	reused   *report.Report // the recorded verdict this run reuses: the chain ends (reuse.go)
	warnings []string
	stages   []report.Stage
	err      error // could not evaluate (or interrupted): the chain stopped here
}

// stage is one named step. run returns the stage's status and one-line
// detail; an error means the model could not be evaluated and ends the chain.
type stage struct {
	name string
	// when, if set, says whether the stage applies; a false answer records
	// the stage as SKIPPED with the reason.
	when func(*state) (bool, string)
	run  func(context.Context, *state) (verdict.Status, string, error)
}

// runChain runs the stages in order until one errors, the model is
// rejected, or the context ends, then builds the report.
func runChain(ctx context.Context, s *Settings, command, arg, version string, stages []stage) *report.Report {
	begin := time.Now()
	st := &state{s: s, command: command, arg: arg, version: version, started: begin.UTC().Truncate(time.Second)}
	defer st.releaseWorkspace()
	defer st.closeWorker()
	for _, sg := range stages {
		if ctx.Err() != nil {
			st.err = fmt.Errorf("%w before %s: %w", errInterrupted, sg.name, context.Cause(ctx))
			break
		}
		if sg.when != nil {
			if ok, why := sg.when(st); !ok {
				st.record(report.Stage{Name: sg.name, Status: verdict.Skip, Detail: why})
				continue
			}
		}
		begin := time.Now()
		status, detail, err := sg.run(ctx, st)
		if err != nil {
			if ctx.Err() != nil && !errors.Is(err, errInterrupted) {
				err = fmt.Errorf("%w in %s: %w", errInterrupted, sg.name, err)
			}
			status, detail, st.err = verdict.Error, err.Error(), err
		}
		st.record(report.Stage{Name: sg.name, Status: status, Seconds: time.Since(begin).Seconds(), Detail: detail})
		if st.err != nil || status == verdict.Rejected || st.reused != nil {
			break
		}
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
	if st.s.Progress != nil {
		line := fmt.Sprintf("phase0: %-18s %-8s %7.2fs", sg.Name, sg.Status, sg.Seconds)
		if sg.Detail != "" {
			line += "  " + sg.Detail
		}
		fmt.Fprintln(st.s.Progress, line)
	}
}

// py is the run's typed ops; the worker session starts on the first op.
func (st *state) py() *ops.Client {
	if st.client == nil {
		st.client = st.s.opsClient()
	}
	return st.client
}

func (st *state) closeWorker() {
	if st.client != nil {
		st.client.Close()
	}
}

// status is the overall verdict: ERROR when the chain stopped on an error,
// REJECTED by the architecture gate, FAIL when any gate failed, else PASS.
func (st *state) status() verdict.Status {
	if st.err != nil {
		return verdict.Error
	}
	if st.analysis != nil && st.analysis.Rejected() {
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
	return report.Gates{Weights: st.weights, ConfigConsistency: st.consistency, PyWeights: st.loader, HFBaseline: st.baseline}
}

// report renders the state as the report object.
func (st *state) report() *report.Report {
	if st.reused != nil {
		return st.reusedReport()
	}
	r := &report.Report{Tool: "phase0", Version: st.version, Command: st.command, Model: st.arg, Status: st.status(),
		Defaulted: []model.Defaulted{}, Rejections: []model.Rejection{}, Warnings: append([]string{}, st.warnings...),
		Stages: append([]report.Stage{}, st.stages...), Started: st.started, Gates: st.gates(), Workspace: st.workspace,
		Preflight: st.preflight, Reference: st.reference}
	if st.err != nil {
		r.Error = st.err.Error()
		r.Interrupted = errors.Is(st.err, errInterrupted)
	}
	if st.ref != nil {
		r.ModelID, r.ModelDir, r.Revision, r.Source = st.ref.ID, st.ref.Dir, st.ref.Revision, st.ref.Source
	}
	if a := st.analysis; a != nil {
		r.Architecture, r.Config = a.Architecture, a.Config
		if a.Family != nil {
			r.Family = a.Family.Name()
		}
		r.Defaulted = append(r.Defaulted, a.Defaulted...)
		r.Rejections = append(r.Rejections, a.Rejections...)
		r.Warnings = append(a.Warnings[:len(a.Warnings):len(a.Warnings)], r.Warnings...)
	}
	r.Seconds = time.Since(st.started).Seconds()
	return r
}
