package orchestrator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"phase0/gate/reference"
	"phase0/gate/verdict"
	"phase0/output/report"
	"phase0/output/scaffold"
	"phase0/python/worker"
	"phase0/read/fingerprint"
	"phase0/run/wsfolder"
	"phase0/wire"
)

// referenceApplies: recording is on (reference_steps > 0) and, in run, the
// baseline it extends passed.
func referenceApplies(st *state) (bool, string) {
	if st.in.s.ReferenceSteps <= 0 {
		return false, "reference_steps is 0"
	}
	if g := st.gate1(); g == nil || g.Status != verdict.Pass {
		return false, "the checkpoint failed the native weights gate"
	}
	if b := st.gate2(); b != nil && b.Status != verdict.Pass {
		return false, "the HF baseline did not pass (or the memory preflight refused the model)"
	}
	return true, ""
}

// outStage checks, before anything is read or any Python runs, that
// reference's --out folder can take the recording: a read-only or full
// filesystem, a file in the folder's place, or a recording's file phase0
// did not write there (reference.CheckReplaceable) fails at once.
func outStage(_ context.Context, st *state) (outcome, error) {
	out := st.in.s.ReferenceOut
	if out == "" {
		return pass("no --out: the recording goes to the workspace's reference/"), nil
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return outcome{}, fmt.Errorf("--out %s: %w", out, err)
	}
	if err := reference.CheckFolder(abs); err != nil {
		return outcome{}, fmt.Errorf("--out %s: %w", out, err)
	}
	return pass(abs), nil
}

// referenceDir is --out, else <workspace>/reference: run's workspace (its
// generate stage holds the lock), or the one run would write for this model,
// locked here like run locks it; neither inside the model folder.
func (st *state) referenceDir() (string, error) {
	s, ref := st.in.s, st.facts.model
	if s.ReferenceOut != "" {
		abs, _ := filepath.Abs(s.ReferenceOut) // outStage's check: it can be
		return abs, wsfolder.OutsideCheckpoint(ref.Dir, "--out", abs)
	}
	if w := st.facts.workspace; w != nil {
		if w.foreign {
			out, err := s.Places().OutsideRecord(w.dir, ref.ID)
			return filepath.Join(out, "reference"), err
		}
		return filepath.Join(w.dir, "reference"), nil
	}
	root, spec, err := workspaceFor(st, st.in.version)
	if err != nil {
		return "", err
	}
	if err := scaffold.CheckFolder(root, spec.Name); err != nil {
		return "", err
	}
	ws := filepath.Join(root, spec.Name)
	if err := wsfolder.OutsideCheckpoint(ref.Dir, "--out-dir or --name", ws); err != nil {
		return "", err
	}
	_, foreign, err := st.lockWorkspace(ws)
	if err != nil {
		return "", err
	}
	if foreign {
		out, err := s.Places().OutsideRecord(ws, ref.ID)
		return filepath.Join(out, "reference"), err
	}
	return filepath.Join(ws, "reference"), nil
}

// referenceStage reuses the recording whose key matches, or records it
// through the reference HfRunner. In run a failed recording is a warning (the
// Phase 0 gates stand); in `phase0 reference` it is the command's error.
func referenceStage(ctx context.Context, st *state) (*report.Reference, outcome, error) {
	start := time.Now()
	r, err := st.recordReference(ctx)
	if r != nil {
		r.Seconds = time.Since(start).Seconds()
	}
	if err != nil {
		// One line in the report (the error, warnings[], report.md); the
		// traceback goes to the run's log on stderr only.
		why := st.Explain("reference", err)
		if r != nil {
			r.Status, r.Summary = verdict.Error, why
		}
		if stop := WorkerFailure(err); stop != nil || st.in.command == "reference" {
			if stop == nil {
				stop = fmt.Errorf("recording the reference: %s", why)
			}
			return r, outcome{}, stop
		}
		return r, outcome{Status: verdict.Fail, Detail: "not recorded: " + why, Warnings: []string{"reference not recorded: " + why}}, nil
	}
	if r.Status != verdict.Pass && st.in.command == "reference" {
		return r, outcome{}, errors.New(r.Summary)
	}
	return r, outcome{Status: r.Status, Detail: r.Summary}, nil
}

func (st *state) recordReference(ctx context.Context) (*report.Reference, error) {
	dir, err := st.referenceDir()
	if err != nil {
		return nil, err
	}
	s, ref := st.in.s, st.facts.model
	r := &report.Reference{Section: verdict.NewSection(), Dir: dir, Dtype: cmp.Or(s.ReferenceDtype, "bfloat16"), Steps: s.ReferenceSteps, TopK: reference.DefaultTopK}
	args := BaselineRequest(s, ref, st.facts.analysis.Config, st.weightsModule())
	plan, err := st.Py().ReferencePlan(ctx, args)
	if err != nil {
		return r, err
	}
	files, err := reference.ModelFilesSHA256(ref.Dir)
	if err != nil {
		return r, err
	}
	key := reference.Key{
		Format: reference.Format, ModelFilesSHA256: files, TokenizerSHA256: plan.TokenizerSHA256,
		Prompts: plan.Prompts, CanonicalPrompt: plan.CanonicalPrompt, Dtype: r.Dtype, DecodeSteps: r.Steps, TopK: r.TopK,
		Runner: plan.Runner + " " + plan.RunnerPath, TorchVersion: plan.Torch, TransformersVersion: plan.Transformers,
	}
	if key.InterpreterSHA256, err = st.interpreterDigest(); err != nil {
		// Unstampable: a key no later run can match, so nothing is reused on it.
		r.Why = append(r.Why, err.Error())
		key.InterpreterSHA256 = "unstamped " + st.in.started.Format(time.RFC3339Nano)
	}
	r.KeySHA256, r.Refreshed = key.SHA256(), s.Refresh
	if !s.Refresh {
		rec, why := reference.Reusable(dir, key, r.KeySHA256)
		if rec != nil {
			r.Reused = true
			r.Fill(rec)
			r.Summary = fmt.Sprintf("reused %s (key %s matches): %s", dir, r.KeySHA256[:12], r.Describe())
			return r, nil
		}
		r.Why = append(r.Why, why...)
	}

	staging, err := reference.Stage(dir)
	if err != nil {
		return r, err
	}
	defer staging.Discard()
	rec := wire.RecordReferenceArgs{BaselineArgs: args, Steps: r.Steps, TopK: r.TopK, Dtype: r.Dtype, OutDir: staging.Dir,
		Meta: map[string]any{"key": key, "key_sha256": r.KeySHA256, "revision": ref.Revision}}
	rec.MaxSeq = max(rec.MaxSeq, 1)
	if err := st.Py().RecordReference(ctx, rec); err != nil {
		if msg, ok := worker.Raised(err, "phase0_shim.reference.RecordingWriteError"); ok {
			err = fmt.Errorf("%w: %s", reference.ErrWrite, staging.Named(msg)) // could not evaluate, in run too
		}
		return r, err
	}
	got, err := staging.Read()
	if err != nil {
		return r, fmt.Errorf("reading back the recording: %w", err)
	}
	// The stamp of what the worker imported so far — everything the
	// recording ran — goes beside it (reference.SourcesFile), then all in.
	im, err := st.Py().PythonSources(ctx)
	if err != nil {
		return r, fmt.Errorf("listing the Python the recording ran: %w", err)
	} else if err := staging.WriteSources(fingerprint.StampSources(im)); err != nil {
		return r, err
	} else if err := staging.Commit(); err != nil {
		return r, err
	}
	r.Fill(got)
	for _, f := range reference.Findings(got, r.KeySHA256) {
		r.FailWith("%s", f)
	}
	if r.Status != verdict.Pass {
		r.Summary = r.Findings[0]
		return r, nil
	}
	verb := "recorded"
	if len(r.Why) > 0 || r.Refreshed {
		verb = "re-recorded (" + cmp.Or(strings.Join(r.Why, "; "), "--refresh") + ")"
	}
	r.Summary = fmt.Sprintf("%s %s: %s", verb, dir, r.Describe())
	return r, nil
}

// interpreterDigest stamps the run's Python and its installed packages.
func (st *state) interpreterDigest() (string, error) {
	py, err := st.in.s.python().Interpreter()
	if err != nil {
		return "", err
	}
	in, err := fingerprint.StampInterpreter(py)
	if err != nil {
		return "", err
	}
	return in.Digest(), nil
}

// ReferenceRun records (or reuses) the reference of one model without the
// rest of Phase 0: `phase0 reference MODEL [--dtype float32 --out DIR]`.
func ReferenceRun(ctx context.Context, s *Settings, modelArg, version string) *report.Report {
	local := *s
	if local.ReferenceSteps <= 0 {
		local.ReferenceSteps = reference.DefaultSteps
	}
	return runChain(ctx, &local, "reference", modelArg, version, withoutSkippedScan(referenceStages, &local))
}
