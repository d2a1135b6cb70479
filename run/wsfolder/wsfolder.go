// Package wsfolder decides, without writing anything, where a model's
// workspace folder may go and how phase0 treats it: the mode (generate, or
// validate an existing module), the names that collide with another model,
// the names too long for the filesystem, and the temporaries a killed run
// left there.
package wsfolder

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"phase0/internal/atomicfile"
	"phase0/output/report"
	"phase0/output/scaffold"
	"phase0/read/hfcache"
	"phase0/read/llmstree"
)

// staleAge is how old a temporary file in a report folder outside the
// workspace must be before a run removes it: that folder is not under the
// workspace lock, so a younger one may belong to a live run.
const staleAge = time.Minute

// Classify decides the workspace mode: validated_existing when
// <name>_weights.py exists and its bytes are not phase0's, else generated.
// It refuses a folder of the tree that is not a model workspace and a
// module (phase0's or not) written for another model.
func Classify(root string, spec scaffold.Spec, files []scaffold.File) (string, error) {
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
	if err := checkSameCheckpoint(ws, spec); err != nil {
		return "", err
	}
	if own == scaffold.Ours {
		return report.ModeGenerated, nil
	}
	return report.ModeValidatedExisting, nil
}

// checkSameCheckpoint refuses a workspace whose module was generated for
// another local checkpoint: a folder's name is its MODEL_ID, so run1/ckpt
// and run2/ckpt (training outputs: checkpoint-500 of two runs) share one,
// and only CHECKPOINT_PATH tells them apart. A recorded checkpoint that no
// longer holds a config.json was moved or deleted: this run takes its place.
func checkSameCheckpoint(ws string, spec scaffold.Spec) error {
	if spec.Checkpoint.Root != scaffold.RootWorkspace {
		return nil
	}
	module := filepath.Join(ws, spec.Name+"_weights.py")
	have, err := scaffold.CheckpointPathIn(module)
	if err != nil || have == "" || have == spec.Checkpoint.Path {
		return err
	}
	old, err := realPath(filepath.Join(ws, filepath.FromSlash(have)))
	if err != nil {
		return err
	}
	cur, err := realPath(filepath.Join(ws, filepath.FromSlash(spec.Checkpoint.Path)))
	if err != nil || old == cur {
		return err
	}
	if _, err := os.Stat(filepath.Join(old, "config.json")); err != nil {
		return nil
	}
	suggest := scaffold.DeriveName(filepath.Base(filepath.Dir(cur)) + "_" + filepath.Base(cur))
	if suggest == "" || suggest == spec.Name {
		suggest = spec.Name + "_2"
	}
	return fmt.Errorf("workspace name collision: %s is the workspace of the local checkpoint %s (CHECKPOINT_PATH in %s), not of %s, which has the same folder name; pass --name to give this model its own workspace (e.g. --name %s)",
		ws, old, module, cur, suggest)
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
// no hub id; orchestrator's generate stage compares it with the module's
// Config instead.
func checkNamedModel(root string, spec scaffold.Spec) error {
	if !spec.OnHub || !IsHubID(spec.ModelID) {
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
	hint := "pass --name to give this model its own workspace (e.g. --name " + SuggestName(spec) + ")"
	if folders, err := llmstree.Scan(root, scaffold.ReservedNames); err == nil {
		if own, err := llmstree.Lookup(folders, spec.ModelID); err == nil && own != "" {
			hint = fmt.Sprintf("the tree's folder for %s is %s: drop --name, or pass --name %s", spec.ModelID, own, own)
		}
	}
	return fmt.Errorf("workspace name collision: %s is the folder of %s (named in %s), not of %s; %s",
		dir, strings.Join(f.IDs, ", "), strings.Join(f.Files, ", "), spec.ModelID, hint)
}

// SuggestName is a workspace name for spec's model that is not spec.Name.
func SuggestName(spec scaffold.Spec) string {
	if d := scaffold.DeriveName(spec.ModelID); d != "" && d != spec.Name {
		return d
	}
	return spec.Name + "_2"
}

// DocumentsOnly keeps the documents (TODO.md, progress.md …): validating an
// existing module adds no generated code next to it.
func DocumentsOnly(files []scaffold.File) []scaffold.File {
	var out []scaffold.File
	for _, f := range files {
		if f.KeepExisting {
			out = append(out, f)
		}
	}
	return out
}

// Sweep removes temporaries a killed run left: all of them inside the
// workspace ws (this run holds its lock), and in reportDir when outside it
// only those older than staleAge before the lock was taken.
func Sweep(reportDir, ws string, locked time.Time) ([]string, error) {
	swept, err := atomicfile.SweepStale(ws, locked, 4)
	if dir := reportDir; dir != "" {
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

// IsHubID reports whether id is an "org/name" hub id (a local model's id is
// its absolute path).
func IsHubID(id string) bool {
	ref, err := hfcache.ParseID(id)
	return err == nil && ref.Org != ""
}

// CheckNames refuses, before anything is created, a workspace name whose
// folder or files (or their temporaries) would be too long for the
// filesystem: a 240-character --name fails with nothing on disk.
func CheckNames(ws string, files []scaffold.File) error {
	for _, p := range append([]string{ws}, filepathsIn(ws, files)...) {
		if err := atomicfile.CheckName(p); err != nil {
			return fmt.Errorf("workspace %s: %w; pass a shorter --name", filepath.Base(ws), err)
		}
	}
	return nil
}

func filepathsIn(ws string, files []scaffold.File) []string {
	out := make([]string, 0, len(files))
	for _, f := range files {
		out = append(out, filepath.Join(ws, filepath.FromSlash(f.Path)))
	}
	return out
}

// A folder phase0 did not create — upstream's qwen3_0_6b/, a hand-written
// model — is validated, never written into: it stays byte for byte as it
// was, with no new file (no lock, no manifest, no report, no reference, no
// TODO.md; a `git add -A` there picks up nothing). Its lock and its record
// live in phase0's cache (or --report-dir), and the run prints where. The
// one exception is the skill's update protocol: a folder mid-deployment
// (a TODO.md with the phase checklist and a progress.md) gets its Phase 0
// entry and tick on PASS, and nothing else.

// Foreign says whether ws is such a folder: it exists and holds no
// phase0 manifest. A workspace phase0 generated keeps its manifest, and its
// records, even when the user has since edited its module; a folder holding
// only phase0's lock, temporaries and the reference `phase0 reference`
// recorded (scaffold.Leftovers) is phase0's own, which `run` generates.
func Foreign(ws string) bool {
	if _, err := os.Lstat(filepath.Join(ws, scaffold.ManifestName)); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	fi, err := os.Stat(ws)
	if err != nil || !fi.IsDir() {
		return false
	}
	ours, err := scaffold.Leftovers(ws)
	return err != nil || !ours
}

// MidDeployment says whether a foreign folder follows the skill's layout
// (a TODO.md with the phase checklist, and docs/development_progress/
// progress.md): then a PASS is entered there as the skill asks.
func MidDeployment(ws string) bool {
	if _, err := os.Stat(filepath.Join(ws, "docs", "development_progress", "progress.md")); err != nil {
		return false
	}
	ok, err := scaffold.HasPhaseChecklist(filepath.Join(ws, "TODO.md"))
	return err == nil && ok
}

// OutsideDir is where the lock and record of a folder phase0 did not create
// live: <cache>/validated/<name>-<hash of the folder's path>.
func OutsideDir(cache, ws string) string {
	sum := sha256.Sum256([]byte(ws))
	return filepath.Join(cache, "validated", filepath.Base(ws)+"-"+hex.EncodeToString(sum[:])[:12])
}

// OutsideRecordDir is where one model's record of such a folder lives: a
// folder of its own under OutsideDir, so that the base and the instruct id
// an upstream folder serves keep separate verdicts.
func OutsideRecordDir(cache, ws, modelID string) string {
	sum := sha256.Sum256([]byte(modelID))
	return filepath.Join(OutsideDir(cache, ws), scaffold.DeriveName(modelID)+"-"+hex.EncodeToString(sum[:])[:8])
}

// Name is the workspace name for modelID: name when given; else, in the
// llms tree llms (when there is one), the folder whose
// verify_adapter.py or *_inference.py names the hub id (upstream's folder
// names follow no one rule: Qwen/Qwen2.5-0.5B lives in qwen25_0_5b); else
// the name derived from the id.
func Name(name, llms, modelID string) (string, error) {
	if name != "" {
		return name, nil
	}
	folder, err := treeFolder(llms, modelID)
	if err != nil || folder != "" {
		return folder, err
	}
	return scaffold.DeriveName(modelID), nil
}

// treeFolder is the Phase 0 folder of the llms tree that names the hub
// id modelID, or "" when there is no tree, the model is not a hub id, or no
// folder names it.
func treeFolder(llms, modelID string) (string, error) {
	if llms == "" || !IsHubID(modelID) {
		return "", nil
	}
	folders, err := llmstree.Scan(llms, scaffold.ReservedNames)
	if err != nil {
		return "", err
	}
	return llmstree.Lookup(folders, modelID)
}
