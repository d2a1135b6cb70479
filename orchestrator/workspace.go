package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"phase0/configgate"
	"phase0/hfcache"
	"phase0/internal/atomicfile"
	"phase0/internal/wslock"
	"phase0/llmstree"
	"phase0/ops"
	"phase0/report"
	"phase0/scaffold"
	"phase0/verdict"
)

// staleAge is how old a temporary file in a report folder outside the
// workspace must be before a run removes it: that folder is not under the
// workspace lock, so a younger one may belong to a live run.
const staleAge = time.Minute

// weightsModule is <name>_weights.py of this run: the generated one, or the
// existing one being validated.
// It is "" before the generate stage (and in commands without one).
func (st *state) weightsModule() string {
	w := st.facts.workspace
	if w == nil || st.facts.quant != nil {
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
	// Refuse before creating anything (the lock file included) in a folder
	// that is not this model's workspace.
	first, err := classify(root, spec, files)
	if err != nil {
		return nil, outcome{}, err
	}
	if first == report.ModeValidatedExisting && st.facts.model.Local {
		if err := st.checkLocalModel(ctx, spec, filepath.Join(ws, spec.Name+"_weights.py")); err != nil {
			return nil, outcome{}, err
		}
	}
	lock, foreign, err := st.lockWorkspace(ws)
	if err != nil {
		return nil, outcome{}, err
	}
	// Decide again under the lock: another run may have changed the folder.
	mode, err := classify(root, spec, files)
	if err != nil {
		return nil, outcome{}, err
	}
	module := spec.Name + "_weights.py"
	var swept, warnings []string
	var res scaffold.Result
	if foreign {
		// Nothing is written into, or swept from, a folder phase0 did not create.
		if mode != report.ModeValidatedExisting {
			return nil, outcome{}, fmt.Errorf("%s holds no %s and no phase0 manifest; phase0 does not write into it — pass --name to pick another name", ws, module)
		}
	} else {
		if swept, err = sweep(st.in.s, ws, lock.Acquired); err != nil {
			warnings = append(warnings, err.Error())
		}
		if mode == report.ModeValidatedExisting {
			files = documentsOnly(files)
		}
		if res, err = scaffold.Write(ws, files); err != nil {
			// The sweep's warning stands in the report of the failed run.
			return nil, outcome{warnings: warnings}, err
		}
	}
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
		out, err := st.in.s.outsideRecordDir(ws, st.facts.model.ID)
		if err != nil {
			return nil, outcome{}, err
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
	return &workspace{dir: ws, spec: spec, report: w, foreign: foreign}, outcome{status: verdict.Pass, detail: detail, warnings: warnings}, nil
}

// classify decides the workspace mode: validated_existing when
// <name>_weights.py exists and its bytes are not phase0's, else generated.
// It refuses a folder of the tree that is not a model workspace and a
// module (phase0's or not) written for another model.
func classify(root string, spec scaffold.Spec, files []scaffold.File) (string, error) {
	if err := scaffold.CheckFolder(root, spec.Name); err != nil {
		return "", err
	}
	if err := checkNamedModel(root, spec); err != nil {
		return "", err
	}
	ws := filepath.Join(root, spec.Name)
	own, err := scaffold.Owner(ws, spec.Name+"_weights.py")
	if err != nil || own == scaffold.Absent {
		return report.ModeGenerated, err
	}
	// Even phase0's own module, if written for another model, is that
	// model's workspace: regenerating it would strand its TODO and progress.
	if err := checkSameModel(filepath.Join(ws, spec.Name+"_weights.py"), scaffold.ModelIDOf(files, spec), spec.Name); err != nil {
		return "", err
	}
	if own == scaffold.Ours {
		return report.ModeGenerated, nil
	}
	return report.ModeValidatedExisting, nil
}

// checkSameModel refuses to validate a weights module written for another
// model: its MODEL_ID (read as text, never imported) names a different id
// than the one this run would write. A module without MODEL_ID (upstream's
// hand-written ones) cannot be told apart and is validated.
func checkSameModel(path, want, name string) error {
	have, err := scaffold.ModelIDIn(path)
	if err != nil {
		return err
	}
	if have == "" || want == "" || strings.EqualFold(have, want) {
		return nil
	}
	return fmt.Errorf("workspace name collision: %s belongs to another model (MODEL_ID %q, this run is %q); pass --name to give this model its own workspace (e.g. --name %s_2)",
		path, have, want, name)
}

// checkNamedModel refuses a folder of the tree whose verify_adapter.py or
// *_inference.py names hub ids other than this run's: it belongs to that
// model, whatever its weights module looks like. A local checkpoint names
// no hub id; generateStage compares it with the module's Config instead.
func checkNamedModel(root string, spec scaffold.Spec) error {
	if !spec.OnHub || !isHubID(spec.ModelID) {
		return nil
	}
	dir := filepath.Join(root, spec.Name)
	f, err := llmstree.ReadFolder(dir, spec.Name)
	if err != nil {
		return err
	}
	if len(f.IDs) == 0 || f.Names(spec.ModelID) {
		return nil
	}
	hint := "pass --name to give this model its own workspace (e.g. --name " + suggestName(spec) + ")"
	if folders, err := llmstree.Scan(root, scaffold.ReservedNames); err == nil {
		if own, err := llmstree.Lookup(folders, spec.ModelID); err == nil && own != "" {
			hint = fmt.Sprintf("the tree's folder for %s is %s: drop --name, or pass --name %s", spec.ModelID, own, own)
		}
	}
	return fmt.Errorf("workspace name collision: %s is the folder of %s (named in %s), not of %s; %s",
		dir, strings.Join(f.IDs, ", "), strings.Join(f.Files, ", "), spec.ModelID, hint)
}

// checkLocalModel refuses to validate someone else's module against a local
// checkpoint it was not written for. A local folder names no hub id, so the
// module's LlamaConfig() (imported by the worker; nothing is written yet)
// decides: core dimensions that disagree mean another model, whose folder
// this is not (upstream's qwen3_0_6b is not a tiny Qwen3's workspace). A
// module that cannot be imported is left to the gates, which report why.
func (st *state) checkLocalModel(ctx context.Context, spec scaffold.Spec, module string) error {
	facts, err := st.py().ModuleConfig(ctx, ops.ModuleConfigArgs{WeightsModule: module})
	if err != nil {
		return workerFailure(err)
	}
	if facts.Generated == nil {
		return fmt.Errorf("module_config of %s returned no config facts", module)
	}
	differ, err := configgate.CoreDimsDiffer(st.facts.analysis.Config, facts.Generated)
	if err != nil || len(differ) == 0 {
		return err
	}
	return fmt.Errorf("workspace name collision: %s describes another model than the local checkpoint %s (%s); pass --name to give this model its own workspace (e.g. --name %s)",
		module, spec.ModelID, strings.Join(differ, ", "), suggestName(spec))
}

// suggestName is a workspace name for spec's model that is not spec.Name.
func suggestName(spec scaffold.Spec) string {
	if d := scaffold.DeriveName(spec.ModelID); d != "" && d != spec.Name {
		return d
	}
	return spec.Name + "_2"
}

// documentsOnly keeps the documents (TODO.md, progress.md …): validating an
// existing module adds no generated code next to it.
func documentsOnly(files []scaffold.File) []scaffold.File {
	var out []scaffold.File
	for _, f := range files {
		if f.KeepExisting {
			out = append(out, f)
		}
	}
	return out
}

// sweep removes temporaries a killed run left: all of them inside the
// workspace ws (this run holds its lock), and in a report folder outside it
// only those older than staleAge before the lock was taken.
func sweep(s *Settings, ws string, locked time.Time) ([]string, error) {
	swept, err := atomicfile.SweepStale(ws, locked, 4)
	if dir := s.ReportDir; dir != "" {
		abs, absErr := filepath.Abs(dir)
		if rel, relErr := filepath.Rel(ws, abs); absErr == nil && (relErr != nil || strings.HasPrefix(rel, "..")) {
			more, moreErr := atomicfile.SweepStale(abs, locked.Add(-staleAge), 0)
			swept = append(swept, more...)
			if err == nil {
				err = moreErr
			}
		}
	}
	if err != nil {
		err = fmt.Errorf("sweeping stale temporary files: %w", err)
	}
	return swept, err
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
	root, err := filepath.Abs(workspaceRoot(s))
	if err != nil {
		return "", scaffold.Spec{}, err
	}
	name, err := workspaceName(s, ref.ID)
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
	if err := recordCheckpoint(&spec, ref, filepath.Join(root, name)); err != nil {
		return "", scaffold.Spec{}, err
	}
	return root, spec, nil
}

// workspaceDir is <llms>/<name> for a model id.
func workspaceDir(s *Settings, modelID string) (string, error) {
	root, err := filepath.Abs(workspaceRoot(s))
	if err != nil {
		return "", err
	}
	name, err := workspaceName(s, modelID)
	if err != nil {
		return "", err
	}
	return filepath.Join(root, name), nil
}

// workspaceName is the name setting; else, in an llms tree, the folder whose
// verify_adapter.py or *_inference.py names the hub id (upstream's folder
// names follow no one rule: Qwen/Qwen2.5-0.5B lives in qwen25_0_5b); else
// the name derived from the id.
func workspaceName(s *Settings, modelID string) (string, error) {
	if s.Name != "" {
		return s.Name, nil
	}
	folder, err := treeFolderFor(s, modelID)
	if err != nil || folder != "" {
		return folder, err
	}
	return scaffold.DeriveName(modelID), nil
}

// treeFolderFor is the Phase 0 folder of the llms tree that names the hub
// id modelID, or "" when there is no tree, the model is not a hub id, or no
// folder names it.
func treeFolderFor(s *Settings, modelID string) (string, error) {
	if s.LLMSDir == "" || !isHubID(modelID) {
		return "", nil
	}
	folders, err := llmstree.Scan(s.LLMSDir, scaffold.ReservedNames)
	if err != nil {
		return "", err
	}
	return llmstree.Lookup(folders, modelID)
}

// isHubID reports whether id is an "org/name" hub id (a local model's id is
// its absolute path).
func isHubID(id string) bool {
	ref, err := hfcache.ParseID(id)
	return err == nil && ref.Org != ""
}

// reportDirFor is where run records report.json for a workspace: the
// report_dir setting, else the workspace's docs/development_progress/phase0,
// else, for a folder phase0 did not create, outside it (foreign.go).
func reportDirFor(s *Settings, ws, modelID string) (string, error) {
	if s.ReportDir != "" {
		return filepath.Abs(s.ReportDir)
	}
	if foreignFolder(ws) {
		return s.outsideRecordDir(ws, modelID)
	}
	return filepath.Join(ws, "docs", "development_progress", "phase0"), nil
}

// lockWorkspace creates <name>/ and takes its lock for the rest of the run
// (released when the chain ends); a held lock names its holder. A folder
// phase0 did not create (foreign) is locked from outside (foreign.go).
func (st *state) lockWorkspace(ws string) (lock *wslock.Lock, foreign bool, err error) {
	lockPath := filepath.Join(ws, scaffold.LockName)
	if foreignFolder(ws) {
		out, err := st.in.s.outsideDir(ws)
		if err != nil {
			return nil, false, err
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			return nil, false, fmt.Errorf("creating %s: %w", out, err)
		}
		lockPath, foreign = filepath.Join(out, scaffold.LockName), true
	} else if err := os.MkdirAll(ws, 0o755); err != nil {
		return nil, false, fmt.Errorf("creating workspace %s: %w", ws, err)
	}
	lock, err = wslock.Acquire(lockPath, wslock.Self(st.in.started))
	if errors.Is(err, wslock.ErrHeld) {
		return nil, false, fmt.Errorf("workspace %s: %w; wait for that run to finish", ws, err)
	}
	if err != nil {
		return nil, false, fmt.Errorf("workspace %s: %w", ws, err)
	}
	st.hold(lock)
	return lock, foreign, nil
}
