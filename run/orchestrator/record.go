package orchestrator

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"phase0/gate/verdict"
	"phase0/output/record"
	"phase0/output/report"
	"phase0/output/scaffold"
	"phase0/run/reuse"
	"phase0/run/wsfolder"
)

// recordStage records the run as one commit (package record). In a folder
// phase0 did not create, the reports go outside it and the folder gets
// nothing, except, mid-deployment and on PASS, its Phase 0 entry and tick
// (wsfolder.Places).
func recordStage(_ context.Context, st *state) (*recorded, outcome, error) {
	w, ref := st.facts.workspace, st.facts.model
	dir, err := st.in.s.Places().Reports(w.dir, st.RecordID())
	if err != nil {
		return nil, outcome{}, err
	}
	rec := &recorded{json: filepath.Join(dir, "report.json"), md: filepath.Join(dir, "report.md")}
	passed := st.status() == verdict.Pass
	if !w.foreign || passed && wsfolder.MidDeployment(w.dir) {
		rec.entered = []string{record.ProgressDoc, record.TODODoc}
	}
	r := st.reportRecorded(rec)
	entry := func() string { return st.progressEntryOf(r) }
	docs, err := record.Docs(r, w.dir, !w.foreign, passed, entry, record.WithoutLocalPaths(report.Blockers(r), ref.Dir, w.dir))
	if err != nil {
		return &recorded{json: rec.json, md: rec.md}, outcome{}, fmt.Errorf("recording the result (nothing was written): %w", err) // nothing entered
	}
	var encode func([]report.File) ([]byte, error)
	if in := st.facts.inputs; in != nil {
		encode = func(files []report.File) ([]byte, error) { return reuse.Encode(in, w.dir, rec.json, files) }
	}
	if err := record.Commit(r, dir, docs, filepath.Join(dir, reuse.FileName), encode); err != nil {
		return rec, outcome{}, err
	}
	switch {
	case !w.foreign:
		return rec, pass(rec.md), nil
	case len(rec.entered) > 0:
		return rec, pass(rec.md + " (Phase 0 entered in " + w.dir + "'s progress.md and TODO.md, nothing else written there)"), nil
	}
	return rec, pass(rec.md + " (outside " + w.dir + ", which is left as it was)"), nil
}

// progressEntryOf is the progress.md entry for report r of this run.
func (st *state) progressEntryOf(r *report.Report) string {
	w := st.facts.workspace
	return report.ProgressEntry(r, st.facts.analysis.Config, w.spec, filepath.Dir(w.dir), scaffold.DefinesFunc(st.weightsModule(), "default_checkpoint"), DefaultModel)
}

// reportRecorded is the report as the record stage writes it: the run so
// far, naming where it is being written and what it enters in the folder.
func (st *state) reportRecorded(rec *recorded) *report.Report {
	r := st.report()
	if r.Workspace != nil {
		w := *r.Workspace
		w.ReportJSON, w.ReportMD = rec.json, rec.md
		if st.facts.workspace.foreign {
			w.Entered = rec.entered
		}
		r.Workspace = &w
	}
	return r
}

// enterStage completes a reused PASS in a mid-deployment folder phase0 did
// not create: its TODO.md and progress.md are a person's, not reuse inputs
// (phase0's own workspace stamps them), so after a reuse the folder's
// Phase 0 entry and tick are brought up to date from the recorded report —
// the entry the PASS wrote, byte for byte — and nothing else is touched.
func enterStage(_ context.Context, st *state) (outcome, error) {
	r := st.facts.reuse.reused // a PASS of a mid-deployment folder (reusedMidDeployment)
	w := r.Workspace
	// The spec the entry names the model by, as generate built it
	// (wsfolder.RecordCheckpoint: a local folder by its name, never its path).
	spec := scaffold.Spec{Name: w.Name, ModelID: r.ModelID, OnHub: !filepath.IsAbs(r.ModelID), Revision: r.Revision, Source: r.Source}
	if !spec.OnHub {
		spec.ModelID = filepath.Base(r.ModelID) // as RecordCheckpoint names a local folder
	}
	module := filepath.Join(w.Dir, w.Name+"_weights.py")
	entry := report.ProgressEntry(r, r.Config, spec, filepath.Dir(w.Dir), scaffold.DefinesFunc(module, "default_checkpoint"), DefaultModel)
	changed, err := record.Enter(w.Dir, entry)
	if err != nil {
		return outcome{}, err
	}
	if len(changed) == 0 {
		return pass("the Phase 0 entry and tick in " + w.Dir + " are up to date"), nil
	}
	return pass(fmt.Sprintf("the reused PASS entered in %s: %s (nothing else written there)", w.Dir, strings.Join(changed, ", "))), nil
}
