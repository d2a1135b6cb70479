package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"phase0/internal/atomicfile"
	"phase0/report"
	"phase0/reuse"
	"phase0/scaffold"
	"phase0/verdict"
)

// A record is one commit. report.json, report.md and the chart, Phase 0's
// section of phase_timing.md, the progress entry (on PASS), the TODO tick
// and the manifest that owns those documents are all rendered, then
// written and synced to temporaries beside their paths, and only then
// renamed into place, the old inputs.json removed with them. A folder that
// refuses a file or a disk that fills fails before the first rename: the
// previous record stays whole and the run is "could not evaluate" (exit
// 2). The new inputs.json stamps the workspace as the commit left it
// (sizes, times, inodes cannot be known before), so it is written right
// after, into the space the old one freed. Any failure from the first
// rename on marks report.json ERROR and leaves no inputs.json: a PASS
// report never stands beside an exit 2, nor is an incomplete one reused.

// Paths of the documents the record updates, relative to the workspace.
var (
	todoDoc     = "TODO.md"
	progressDoc = filepath.Join("docs", "development_progress", "progress.md")
	timingDoc   = filepath.Join("docs", "development_progress", scaffold.PhaseTimingName)
)

// recordStage records the run (see above). In a folder phase0 did not
// create, the reports go outside it and the folder gets nothing, except,
// mid-deployment and on PASS, its Phase 0 entry and tick (foreign.go).
func recordStage(_ context.Context, st *state) (*recorded, outcome, error) {
	w, ref := st.facts.workspace, st.facts.model
	dir, err := reportDirFor(st.in.s, w.dir, ref.ID)
	if err != nil {
		return nil, outcome{}, err
	}
	rec := &recorded{json: filepath.Join(dir, "report.json"), md: filepath.Join(dir, "report.md")}
	passed := st.status() == verdict.Pass
	if !w.foreign || passed && midDeployment(w.dir) {
		rec.entered = []string{progressDoc, todoDoc}
	}
	r := st.reportRecorded(rec)
	docs, err := st.recordDocs(r, passed)
	if err != nil {
		return rec, outcome{}, fmt.Errorf("recording the result (nothing was written): %w", err)
	}
	files, err := report.Files(r, dir)
	if err != nil {
		return rec, outcome{}, fmt.Errorf("recording the result (nothing was written): %w", err)
	}
	files = append(files, docs...)
	inputs := filepath.Join(dir, reuse.FileName)
	// Every file must be writable before the first is staged: a clear
	// message for a read-only or immutable file, a folder in a file's place.
	for _, p := range append(paths(files), inputs) {
		if err := atomicfile.CheckWritable(p); err != nil {
			return rec, outcome{}, fmt.Errorf("recording the result (nothing was written): %w", err)
		}
	}
	var b atomicfile.Batch
	for _, f := range files {
		if err := b.Add(f.Path, f.Data); err != nil {
			return rec, outcome{}, fmt.Errorf("recording the result (nothing was written): %w", err)
		}
	}
	// The old inputs.json goes with the old record; the new one stamps the
	// workspace as the commit left it (sizes, times, inodes), so it is
	// written right after, into the space the old one freed.
	b.Remove(inputs)
	fail := func(err error) (*recorded, outcome, error) {
		// Committed in part, or without its inputs: the report must not
		// stand as a complete PASS beside an exit 2, nor be reused.
		// Marking it is best effort; the error stands.
		r.Status, r.Error = verdict.Error, "the record is incomplete: "+err.Error()
		_ = report.Write(r, dir)
		_ = os.Remove(inputs)
		return rec, outcome{}, fmt.Errorf("recording the result: %w", err)
	}
	if err := b.Commit(); err != nil {
		return fail(err)
	}
	if in := st.facts.inputs; in != nil {
		data, err := reuse.Encode(in, w.dir, rec.json, files)
		if err == nil {
			err = atomicfile.Write(inputs, data)
		}
		if err != nil {
			return fail(err)
		}
	}
	switch {
	case !w.foreign:
		return rec, pass(rec.md), nil
	case len(rec.entered) > 0:
		return rec, pass(rec.md + " (Phase 0 entered in " + w.dir + "'s progress.md and TODO.md, nothing else written there)"), nil
	}
	return rec, pass(rec.md + " (outside " + w.dir + ", which is left as it was)"), nil
}

// recordDocs renders the workspace documents the record updates: in
// phase0's own workspace Phase 0's timing section, the progress entry on
// PASS, the TODO status and the manifest that owns them; in a folder
// phase0 did not create, the entry and the tick the record enters
// (recorded.entered), or nothing.
func (st *state) recordDocs(r *report.Report, passed bool) ([]report.File, error) {
	w := st.facts.workspace
	if w.foreign && len(r.Workspace.Entered) == 0 {
		return nil, nil
	}
	blockers := withoutLocalPaths(report.Blockers(r), st)
	var out []report.File
	owned := map[string][]byte{}
	put := func(rel, text string) {
		out = append(out, report.File{Path: filepath.Join(w.dir, rel), Data: []byte(text)})
		owned[filepath.ToSlash(rel)] = []byte(text)
	}
	entry := func(rel, entry string) error {
		p := filepath.Join(w.dir, rel)
		text, err := scaffold.ReadDoc(p)
		if err == nil {
			text, err = scaffold.Phase0Entry(text, p, entry)
		}
		if err != nil {
			return err
		}
		put(rel, text)
		return nil
	}
	if !w.foreign {
		if err := entry(timingDoc, scaffold.Phase0Timing(r.Started, time.Now(), string(r.Status), blockers)); err != nil {
			return nil, err
		}
	}
	if passed {
		if err := entry(progressDoc, st.progressEntryOf(r)); err != nil {
			return nil, err
		}
	}
	todo := filepath.Join(w.dir, todoDoc)
	text, err := scaffold.ReadDoc(todo)
	if err == nil {
		text, err = scaffold.Phase0Status(text, todo, passed, blockers, scaffold.WrittenByPhase0(todo, []byte(text)))
	}
	if err != nil {
		return nil, err
	}
	put(todoDoc, text)
	if !w.foreign {
		m, err := scaffold.ManifestAfter(w.dir, owned)
		if err != nil {
			return nil, err
		}
		out = append(out, report.File{Path: filepath.Join(w.dir, scaffold.ManifestName), Data: m})
	}
	return out, nil
}

func paths(files []report.File) []string {
	out := make([]string, 0, len(files)+1)
	for _, f := range files {
		out = append(out, f.Path)
	}
	return out
}

// progressEntryOf is the progress.md entry for report r of this run.
func (st *state) progressEntryOf(r *report.Report) string {
	w := st.facts.workspace
	return report.ProgressEntry(r, st.facts.analysis.Config, w.spec, filepath.Dir(w.dir), definesFunc(st.weightsModule(), "default_checkpoint"), DefaultModel)
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
	// (recordCheckpoint: a local folder by its name, never its path).
	spec := scaffold.Spec{Name: w.Name, ModelID: r.ModelID, OnHub: !filepath.IsAbs(r.ModelID), Revision: r.Revision, Source: r.Source}
	if !spec.OnHub {
		spec.ModelID = filepath.Base(r.ModelDir)
	}
	module := filepath.Join(w.Dir, w.Name+"_weights.py")
	entry := report.ProgressEntry(r, r.Config, spec, filepath.Dir(w.Dir), definesFunc(module, "default_checkpoint"), DefaultModel)
	var b atomicfile.Batch
	var changed []string
	for _, d := range []struct {
		rel    string
		update func(text, path string) (string, error)
	}{
		{progressDoc, func(text, path string) (string, error) { return scaffold.Phase0Entry(text, path, entry) }},
		{todoDoc, func(text, path string) (string, error) { return scaffold.Phase0Status(text, path, true, nil, false) }},
	} {
		p := filepath.Join(w.Dir, d.rel)
		text, err := scaffold.ReadDoc(p)
		if err != nil {
			b.Abort()
			return outcome{}, fmt.Errorf("entering the reused PASS in %s: %w", w.Dir, err)
		}
		updated, err := d.update(text, p)
		if err == nil && updated != text {
			err = b.Add(p, []byte(updated))
			changed = append(changed, d.rel)
		}
		if err != nil {
			b.Abort()
			return outcome{}, fmt.Errorf("entering the reused PASS in %s (nothing was written): %w", w.Dir, err)
		}
	}
	if len(changed) == 0 {
		return pass("the Phase 0 entry and tick in " + w.Dir + " are up to date"), nil
	}
	if err := b.Commit(); err != nil {
		return outcome{}, fmt.Errorf("entering the reused PASS in %s: %w", w.Dir, err)
	}
	return pass(fmt.Sprintf("the reused PASS entered in %s: %s (nothing else written there)", w.Dir, strings.Join(changed, ", "))), nil
}
