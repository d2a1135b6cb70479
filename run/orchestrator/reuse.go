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
	rec, why, stamp := Reusable(st.in.s, st.in.arg, st.in.version)
	return ReuseOutcome(stamp, rec, why)
}

// ReuseOutcome ends a reuse stage (a bf16 run's or a quantized key's,
// which stamped stamp): SKIPPED saying why the recorded verdict cannot
// stand, or PASS ending the chain with the recorded report rec.
func ReuseOutcome(stamp *reuse.Inputs, rec *report.Report, why string) (reuseResult, outcome, error) {
	res := reuseResult{stamp: stamp}
	if why != "" {
		return res, outcome{Status: verdict.Skip, Detail: why + "; running everything"}, nil
	}
	res.reused = rec
	return res, outcome{Status: verdict.Pass, Detail: fmt.Sprintf("inputs unchanged since %s: reusing %s", rec.ReusedFrom.Recorded.Format(time.RFC3339), rec.ReusedFrom.Path), Done: true}, nil
}

// reuseResult is the reuse stage's: the inputs stamped before the run (nil
// when they could not be), and the recorded verdict when it is reused.
type reuseResult struct {
	stamp  *reuse.Inputs
	reused *report.Report
}

// Reusable is the recorded report of `phase0 run arg` (a bf16 run) under s
// when it can be reused, else why not: the reuse stage's question, and a
// quantized key's about its reference's own bf16 record. Whatever it
// stamps is returned, to be compared at the end of a full run; under
// --fresh it only stamps.
func Reusable(s *Settings, arg, version string) (rec *report.Report, why string, stamp *reuse.Inputs) {
	rec, why = reusable(inputs{s: s, command: "run", arg: arg, version: version}, &stamp)
	return rec, why, stamp
}

func reusable(in inputs, stamped **reuse.Inputs) (*report.Report, string) {
	s := in.s
	ref, why := reuseModel(s, in.arg)
	if why != "" {
		return nil, why
	}
	ws, err := s.Places().Workspace(ref.ID)
	if err != nil {
		return nil, err.Error()
	}
	reports, err := s.Places().Reports(ws, ref.ID)
	if err != nil {
		return nil, err.Error()
	}
	// Stamp what can be stamped before anything else, so that even a first
	// run can tell, when it records, whether the model changed under it.
	stamp := func() (string, bool) {
		cur, err := stampInputs(in, nil, ref, ws)
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
	m, why := reuse.Locate(arg, hfcache.CacheDir(s.Getenv))
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
	reports, err := st.in.s.Places().Reports(ws, st.RecordID())
	if err != nil {
		return nil, outcome{}, err
	}
	path := filepath.Join(reports, reuse.FileName)
	forget := func(why string) (*reuse.Record, outcome, error) {
		return nil, outcome{Status: verdict.Skip, Detail: why + "; the next run runs everything"}, nil
	}
	if status := st.status(); status != verdict.Pass {
		return forget(fmt.Sprintf("verdict %s is not reused", status))
	}
	// A PASS whose reference could not be recorded must not be reused: the
	// next run would skip the recording the later phases need.
	if r := st.sections.reference; r != nil && r.Status != verdict.Pass {
		return forget("the reference was not recorded")
	}
	cur, err := st.CurrentInputs(ref, ws)
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

// CurrentInputs stamps everything a verdict on ref in workspace ws depends on.
func (st *state) CurrentInputs(ref *resolvedModel, ws string) (*reuse.Inputs, error) {
	return stampInputs(st.in, st.key, ref, ws)
}

// stampInputs stamps what the run in (of key, nil for a bf16 run) on ref
// in workspace ws depends on.
func stampInputs(in inputs, key Key, ref *resolvedModel, ws string) (*reuse.Inputs, error) {
	s := in.s
	py, err := s.python().Interpreter()
	if err != nil {
		return nil, err
	}
	settings, err := reuse.StampSettings(in.command, in.arg, s)
	if err != nil {
		return nil, err
	}
	cur := &reuse.Inputs{
		Settings: settings,
		Phase0:   reuse.Phase0{Version: in.version},
		Model:    reuse.ModelInputs{Dir: ref.Dir, ID: ref.ID, Revision: ref.Revision, PromptStyle: ref.PromptStyle},
	}
	if err := reuse.Stamp(cur, reuse.Where{Python: py, LLMSDir: reuse.AbsPath(s.LLMSDir), Shim: s.python().Shim, Workspace: ws}); err != nil {
		return nil, err
	}
	if key != nil {
		if cur.Quant, err = key.QuantInputs(); err != nil {
			return nil, err
		}
	}
	return cur, nil
}
