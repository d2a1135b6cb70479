package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"phase0/gate/config"
	"phase0/gate/verdict"
	"phase0/internal/atomicfile"
	"phase0/internal/wslock"
	"phase0/output/record"
	"phase0/output/report"
	"phase0/output/scaffold"
	"phase0/read/llmstree"
	"phase0/run/wsfolder"
	"phase0/wire"
)

// weightsModule is <name>_weights.py of this run: the generated one, or the
// existing one being validated.
// It is "" before the generate stage (and in commands without one).
func (st *state) weightsModule() string {
	w := st.facts.workspace
	if w == nil || st.key != nil {
		// A quantized folder's module is no Phase 0 module: the baseline
		// runs with phase0's Config.
		return ""
	}
	return filepath.Join(w.dir, w.spec.Name+"_weights.py")
}

// generateStage takes the workspace: it refuses names of the tree's own
// folders, locks <name>/ for the rest of the run, sweeps temporaries a
// killed run left, then writes phase0's files — or, when <name>_weights.py
// exists and is not phase0's, keeps it and marks the run as validating it.
// No file whose bytes phase0 did not write is ever replaced.
func generateStage(ctx context.Context, st *state) (*workspace, outcome, error) {
	root, spec, err := workspaceFor(st, st.in.version)
	if err != nil {
		return nil, outcome{}, err
	}
	ws := filepath.Join(root, spec.Name)
	files, err := scaffold.Render(spec)
	if err != nil {
		return nil, outcome{}, err
	}
	if err := wsfolder.CheckNames(ws, files); err != nil {
		return nil, outcome{}, err
	}
	// Refuse before creating anything (the lock file included) in a folder
	// that is not this model's workspace.
	first, err := wsfolder.Classify(root, spec, files)
	if err != nil {
		return nil, outcome{}, err
	}
	if first == report.ModeValidatedExisting && st.facts.model.Local {
		if err := st.checkLocalModel(ctx, spec, filepath.Join(ws, spec.Name+"_weights.py")); err != nil {
			return nil, outcome{}, err
		}
	}
	// A workspace that does not exist yet is generated whole beside its
	// place and renamed into it: no half-written folder, ever.
	res, created, err := st.newWorkspace(ws, files)
	if err != nil {
		return nil, outcome{}, err
	}
	mode, foreign := report.ModeGenerated, false
	module := spec.Name + "_weights.py"
	var swept, warnings []string
	var lock *wslock.Lock
	if !created {
		if lock, foreign, err = st.lockWorkspace(ws); err != nil {
			return nil, outcome{}, err
		}
		// Decide again under the lock: another run may have changed the folder.
		if mode, err = wsfolder.Classify(root, spec, files); err != nil {
			return nil, outcome{}, err
		}
	}
	switch {
	case created: // written whole by newWorkspace
	case foreign:
		// Nothing is written into, or swept from, a folder phase0 did not create.
		if mode != report.ModeValidatedExisting {
			return nil, outcome{}, fmt.Errorf("%s holds no %s and no phase0 manifest; phase0 does not write into it — pass --name to pick another name", ws, module)
		}
	default:
		var more []string
		res, swept, more, err = st.updateWorkspace(ws, mode, files, lock)
		if warnings = append(warnings, more...); err != nil {
			// The sweep's warning stands in the report of the failed run.
			return nil, outcome{Warnings: warnings}, err
		}
	}
	w, detail, err := st.generatedReport(ws, spec, mode, foreign, res, swept)
	if err != nil {
		return nil, outcome{}, err
	}
	return &workspace{dir: ws, spec: spec, report: w, foreign: foreign}, outcome{Status: verdict.Pass, Detail: detail, Warnings: warnings}, nil
}

// updateWorkspace is generate's work in a workspace phase0 made before,
// under its lock: a record commit a kill cut short is finished before the
// sweep (the temporaries of the documents it updates are its journal's),
// stale temporaries are swept, and the files are written (the documents
// only, when an existing module is validated). It returns what was
// written, what was swept and the warnings.
func (st *state) updateWorkspace(ws string, mode string, files []scaffold.File, lock *wslock.Lock) (res scaffold.Result, swept, warnings []string, err error) {
	if dir, err := st.in.s.Places().Reports(ws, st.RecordID()); err == nil {
		done, err := record.Recover(dir)
		swept = append(swept, done...)
		if err != nil {
			warnings = append(warnings, err.Error())
		}
	}
	more, err := wsfolder.Sweep(st.in.s.ReportDir, ws, lock.Acquired)
	if swept = append(swept, more...); err != nil {
		warnings = append(warnings, err.Error())
	}
	if mode == report.ModeValidatedExisting {
		files = wsfolder.DocumentsOnly(files)
	}
	res, err = scaffold.Write(ws, files)
	return res, swept, warnings, err
}

// generatedReport is the workspace's part of the report, and the stage's
// one-line detail.
func (st *state) generatedReport(ws string, spec scaffold.Spec, mode string, foreign bool, res scaffold.Result, swept []string) (*report.Workspace, string, error) {
	module := spec.Name + "_weights.py"
	// The record stage rewrites Phase 0's part of these documents, so they
	// are not "kept as they were" even when generate left them alone.
	kept := slices.DeleteFunc(nonNil(res.Kept), func(f string) bool {
		return f == "TODO.md" || f == "docs/development_progress/progress.md" || f == "docs/development_progress/"+scaffold.PhaseTimingName
	})
	w := &report.Workspace{Dir: ws, Name: spec.Name, Mode: mode, Written: nonNil(res.Written), Unchanged: nonNil(res.Unchanged),
		Kept: kept, Foreign: nonNil(res.Foreign), Swept: swept, HelpersKept: []string{}}
	if mode == report.ModeGenerated {
		w.HelpersKept = scaffold.HelpersKept(spec)
	} else {
		w.Foreign = append([]string{module + " (not written by phase0: validated, not replaced)"}, w.Foreign...)
	}
	if f, err := llmstree.ReadFolder(ws, spec.Name); err == nil && spec.OnHub && f.Names(spec.ModelID) {
		w.NamedBy = f.Files
	}
	detail := fmt.Sprintf("%s: %d written, %d unchanged", ws, len(res.Written), len(res.Unchanged))
	if mode == report.ModeValidatedExisting {
		detail = fmt.Sprintf("%s: validating the existing %s (not phase0's); %d document(s) written", ws, module, len(res.Written))
	}
	if foreign {
		out, err := st.in.s.Places().OutsideRecord(ws, st.facts.model.ID)
		if err != nil {
			return nil, "", err
		}
		w.RecordDir = out
		detail = fmt.Sprintf("%s: validating the existing %s (not phase0's); the folder is left as it is, the record goes to %s", ws, module, out)
	}
	if len(w.NamedBy) > 0 {
		detail += fmt.Sprintf("; the tree's folder for %s (named in %s)", spec.ModelID, strings.Join(w.NamedBy, ", "))
	}
	if len(swept) > 0 {
		detail += fmt.Sprintf(", %d stale temporary file(s) removed", len(swept))
	}
	return w, detail, nil
}

// checkLocalModel refuses to validate someone else's module against a local
// checkpoint it was not written for. A local folder names no hub id, so the
// module's LlamaConfig() (imported by the worker; nothing is written yet)
// decides: core dimensions that disagree mean another model, whose folder
// this is not (upstream's qwen3_0_6b is not a tiny Qwen3's workspace). A
// module that cannot be imported is left to the gates, which report why.
func (st *state) checkLocalModel(ctx context.Context, spec scaffold.Spec, module string) error {
	facts, err := st.Py().ModuleConfig(ctx, wire.ModuleConfigArgs{WeightsModule: module})
	if err != nil {
		return WorkerFailure(err)
	}
	if facts.Generated == nil {
		return fmt.Errorf("module_config of %s returned no config facts", module)
	}
	differ, err := config.CoreDimsDiffer(st.facts.analysis.Config, facts.Generated)
	if err != nil || len(differ) == 0 {
		return err
	}
	return fmt.Errorf("workspace name collision: %s describes another model than the local checkpoint %s (%s); pass --name to give this model its own workspace (e.g. --name %s)",
		module, spec.ModelID, strings.Join(differ, ", "), wsfolder.SuggestName(spec))
}

func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

// workspaceFor picks the folder holding <name>/ and builds the scaffold
// spec around the one Config.
func workspaceFor(st *state, version string) (string, scaffold.Spec, error) {
	s, ref, a := st.in.s, st.facts.model, st.facts.analysis
	root, err := filepath.Abs(s.Places().Root())
	if err != nil {
		return "", scaffold.Spec{}, err
	}
	name, err := wsfolder.Name(s.Name, s.LLMSDir, ref.ID)
	if err != nil {
		return "", scaffold.Spec{}, err
	}
	if name == "" {
		return "", scaffold.Spec{}, fmt.Errorf("no workspace name can be derived from %q (only ASCII letters and digits are kept); pass --name", filepath.Base(ref.ID))
	}
	spec := scaffold.Spec{
		Config: *a.Config, Family: a.Family,
		Name: name, ModelID: ref.ID, OnHub: !ref.Local, Revision: ref.Revision, Source: ref.Source,
		ToolVersion: version, AttentionFallback: s.AttentionFallback, LicenseHeader: s.LicenseHeader,
	}
	if err := wsfolder.RecordCheckpoint(&spec, ref, filepath.Join(root, name), s.ReportDir); err != nil {
		return "", scaffold.Spec{}, err
	}
	return root, spec, nil
}

// lockWorkspace creates <name>/ and takes its lock for the rest of the run
// (released when the chain ends); a held lock names its holder. A folder
// phase0 did not create (foreign) is locked from outside (wsfolder.Places).
func (st *state) lockWorkspace(ws string) (lock *wslock.Lock, foreign bool, err error) {
	lockPath := filepath.Join(ws, scaffold.LockName)
	if wsfolder.Foreign(ws) {
		out, err := st.in.s.Places().Outside(ws)
		if err != nil {
			return nil, false, err
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			return nil, false, fmt.Errorf("creating %s: %w", out, err)
		}
		lockPath, foreign = filepath.Join(out, scaffold.LockName), true
	}
	var created []string
	if !foreign {
		if err := atomicfile.CheckName(ws); err != nil {
			return nil, false, fmt.Errorf("workspace %s: %w; pass a shorter --name", ws, err)
		}
		if created, err = atomicfile.MkdirTracked(ws); err != nil {
			return nil, false, fmt.Errorf("creating workspace %s: %w", ws, err)
		}
	}
	lock, err = wslock.Acquire(lockPath, wslock.Self(st.in.started))
	if err != nil {
		atomicfile.RemoveCreated(created)
		if errors.Is(err, wslock.ErrHeld) {
			return nil, false, fmt.Errorf("workspace %s: %w; wait for that run to finish", ws, err)
		}
		return nil, false, fmt.Errorf("workspace %s: %w", ws, err)
	}
	st.holdCreated(lock, created)
	return lock, foreign, nil
}

// newWorkspace generates a workspace that does not exist yet: into a
// temporary sibling folder, locked there, then renamed into place with the
// lock held (a flock follows the file, not its name). A failure removes
// the sibling and the folders made for it; nothing half-written is left.
// created is false when ws exists (or appeared meanwhile: another run
// made it): the caller then locks and writes it as it is.
func (st *state) newWorkspace(ws string, files []scaffold.File) (res scaffold.Result, created bool, err error) {
	if _, err := os.Lstat(ws); !errors.Is(err, fs.ErrNotExist) {
		return res, false, nil
	}
	parents, err := atomicfile.MkdirTracked(filepath.Dir(ws))
	if err != nil {
		return res, false, fmt.Errorf("creating %s: %w", filepath.Dir(ws), err)
	}
	tmp, err := atomicfile.MkdirTemp(filepath.Dir(ws), "."+filepath.Base(ws)+".tmp-*")
	if err != nil {
		atomicfile.RemoveCreated(parents)
		return res, false, fmt.Errorf("creating workspace %s: %w", ws, err)
	}
	lock, err := wslock.Acquire(filepath.Join(tmp, scaffold.LockName), wslock.Self(st.in.started))
	if err == nil {
		if res, err = scaffold.Write(tmp, files); err == nil {
			err = os.Rename(tmp, ws)
		}
	}
	if err != nil {
		_ = lock.Release()
		os.RemoveAll(tmp)
		if _, statErr := os.Lstat(ws); statErr == nil {
			return scaffold.Result{}, false, nil // another run made it first
		}
		atomicfile.RemoveCreated(parents)
		return scaffold.Result{}, false, fmt.Errorf("creating workspace %s: %w", ws, err)
	}
	st.holdCreated(lock, append(parents, ws))
	return res, true, nil
}
