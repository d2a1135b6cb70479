package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"phase0/gate/verdict"
	"phase0/output/report"
	"phase0/read/fingerprint"
	"phase0/read/hfcache"
	"phase0/run/resolve"
	"phase0/run/reuse"
)

// A repeat `run` on unchanged inputs reuses the recorded verdict instead of
// starting Python; package reuse says what the inputs are and when a
// recorded PASS stands. Here are the two stages: reuse (stamp, compare, end
// the chain on a reused PASS) and record_inputs (stamp what the verdict of
// this run read, for the record to write as inputs.json).

// reuseStage reuses the recorded verdict when none of its inputs changed;
// otherwise it says why not (SKIPPED) and the chain runs in full. It never
// fails a run.
//
// Its result keeps what it stamped (compared again when the run records)
// and, when the verdict is reused, the recorded report: the chain ends there.
func reuseStage(_ context.Context, st *state) (reuseResult, outcome, error) {
	var res reuseResult
	rec, why := st.reusable(&res.stamp)
	return reuseOutcome(res, rec, why)
}

// reuseOutcome ends a reuse stage (a bf16 run's or a quantized key's): SKIPPED
// saying why the recorded verdict cannot stand, or PASS ending the chain
// with the recorded report rec.
func reuseOutcome(res reuseResult, rec *report.Report, why string) (reuseResult, outcome, error) {
	if why != "" {
		return res, outcome{status: verdict.Skip, detail: why + "; running everything"}, nil
	}
	res.reused = rec
	return res, outcome{status: verdict.Pass, detail: fmt.Sprintf("inputs unchanged since %s: reusing %s", rec.ReusedFrom.Recorded.Format(time.RFC3339), rec.ReusedFrom.Path), done: true}, nil
}

// reuseResult is the reuse stage's: the inputs stamped before the run (nil
// when they could not be), and the recorded verdict when it is reused.
type reuseResult struct {
	stamp  *reuse.Inputs
	reused *report.Report
}

// reusable returns the recorded report when it can be reused, else why not.
// Whatever it stamps goes to *stamp, to be compared at the end of a full
// run; under --fresh it only stamps.
func (st *state) reusable(stamped **reuse.Inputs) (*report.Report, string) {
	s := st.in.s
	ref, why := reuseModel(s, st.in.arg)
	if why != "" {
		return nil, why
	}
	ws, err := s.places().Workspace(ref.ID)
	if err != nil {
		return nil, err.Error()
	}
	reports, err := s.places().Reports(ws, ref.ID)
	if err != nil {
		return nil, err.Error()
	}
	// Stamp what can be stamped before anything else, so that even a first
	// run can tell, when it records, whether the model changed under it.
	stamp := func() (string, bool) {
		cur, err := st.currentInputs(ref, ws)
		if err != nil {
			return err.Error(), false
		}
		*stamped = cur
		return "", true
	}
	if ref.Dir != "" {
		if why, ok := stamp(); !ok {
			return nil, why
		}
	}
	if s.Fresh {
		return nil, "--fresh"
	}
	if s.Refresh {
		return nil, "--refresh (the reference is recorded anew)"
	}
	rec, why := reuse.Recorded(reports)
	if why != "" {
		return nil, why
	}
	if ref.Dir == "" { // the default model: its folder and stamp are phase0's own conversion
		ref.Dir, ref.Revision = rec.Inputs.Model.Dir, rec.Inputs.Model.Revision
		if why, ok := stamp(); !ok {
			return nil, why
		}
	}
	return reuse.Decide(rec, *stamped)
}

// reuseModel finds the model's id, and its folder, without Python and
// without the network: a local folder, a hub id complete in the HF cache,
// or the default model (Dir "" = the recorded conversion). why says when the
// argument cannot be resolved that way; the full run then resolves it.
func reuseModel(s *Settings, arg string) (*resolvedModel, string) {
	if arg == DefaultModel {
		if _, err := os.Stat(arg); err == nil {
			return nil, "MODEL default is ambiguous here"
		}
		return &resolvedModel{ID: resolve.DefaultID, PromptStyle: resolve.DefaultPromptStyle}, ""
	}
	m, why := reuse.Locate(arg, hfcache.CacheDir(s.getenv))
	if why != "" {
		return nil, why
	}
	return &resolvedModel{Dir: m.Dir, Revision: m.Revision, ID: m.ID}, ""
}

// recordInputsStage stamps the inputs of a PASS about to be recorded, so
// the next run with the same inputs can reuse it: the record stage writes
// them (inputs.json) with the report, in one commit. For any other verdict
// it returns nil, and the record removes a stale inputs.json. Inputs that
// changed while the run read them are not recorded.
func recordInputsStage(ctx context.Context, st *state) (*reuse.Record, outcome, error) {
	ws, ref := st.facts.workspace.dir, st.facts.model
	reports, err := st.in.s.places().Reports(ws, st.recordID())
	if err != nil {
		return nil, outcome{}, err
	}
	path := filepath.Join(reports, reuse.FileName)
	forget := func(why string) (*reuse.Record, outcome, error) {
		return nil, outcome{status: verdict.Skip, detail: why + "; the next run runs everything"}, nil
	}
	if status := st.status(); status != verdict.Pass {
		return forget(fmt.Sprintf("verdict %s is not reused", status))
	}
	// A PASS whose reference could not be recorded must not be reused: the
	// next run would skip the recording the later phases need.
	if r := st.sections.reference; r != nil && r.Status != verdict.Pass {
		return forget("the reference was not recorded")
	}
	cur, err := st.currentInputs(ref, ws)
	if err != nil {
		return forget(err.Error())
	}
	if stamped := st.facts.reuse.stamp; stamped != nil && stamped.Model.Dir == cur.Model.Dir {
		before := *stamped
		before.Workspace = cur.Workspace // the run itself writes them
		if why := reuse.Change(&before, cur); why != "" {
			return forget(why + " during the run")
		}
	}
	if st.client == nil || !st.client.Started() {
		return forget("no Python ran")
	}
	im, err := st.client.PythonSources(ctx)
	if err != nil {
		return forget("the worker could not list the Python it ran: " + reasons(err)[0])
	}
	sources := fingerprint.StampSources(im)
	cur.Sources = &sources
	if r := st.sections.reference; r != nil {
		files, err := fingerprint.Tree(r.Dir, fingerprint.TreeOptions{})
		if err != nil {
			return forget("the reference just recorded cannot be stamped: " + err.Error())
		}
		cur.Reference = &reuse.ReferenceStamp{Dir: r.Dir, KeySHA256: r.KeySHA256, Files: files}
	}
	// Report and ReportSHA256 are the record stage's: it renders report.json.
	return &reuse.Record{Format: reuse.Format, Recorded: st.in.started, Inputs: *cur}, pass(path + " (written with the report)"), nil
}

// reusedReport is the recorded report, marked as reused, with this run's
// stages and timing.
func (st *state) reusedReport() *report.Report {
	r := *st.facts.reuse.reused
	r.Stages = append([]report.Stage{}, st.stages...)
	r.Started = st.in.started
	r.Seconds = time.Since(st.in.started).Seconds()
	return &r
}

// currentInputs stamps everything a verdict on ref in workspace ws depends on.
func (st *state) currentInputs(ref *resolvedModel, ws string) (*reuse.Inputs, error) {
	s := st.in.s
	py, err := s.python().Interpreter()
	if err != nil {
		return nil, err
	}
	settings, err := reuse.StampSettings(st.in.command, st.in.arg, s)
	if err != nil {
		return nil, err
	}
	in := &reuse.Inputs{
		Settings: settings,
		Phase0:   reuse.Phase0{Version: st.in.version},
		Model:    reuse.ModelInputs{Dir: ref.Dir, ID: ref.ID, Revision: ref.Revision, PromptStyle: ref.PromptStyle},
	}
	if err := reuse.Stamp(in, reuse.Where{Python: py, LLMSDir: reuse.AbsPath(s.LLMSDir), Shim: s.python().Shim, Workspace: ws}); err != nil {
		return nil, err
	}
	if st.in.quant != nil {
		if in.Quant, err = st.quantInputs(); err != nil {
			return nil, err
		}
	}
	return in, nil
}
