package wsfolder

import (
	"fmt"
	"path/filepath"

	"phase0/output/scaffold"
	"phase0/run/resolve"
)

// RecordCheckpoint tells the generated loader where the validated checkpoint
// is without writing an absolute path into files meant to be committed: a
// hub snapshot by id and revision (nothing to record), the default model
// relative to phase0's cache, a local folder by its name and its path
// relative to the workspace. A workspace or report dir inside the
// checkpoint's folder is refused: its files would change the checkpoint
// phase0 validates, so no later run could reuse the verdict.
func RecordCheckpoint(spec *scaffold.Spec, ref *resolve.Model, ws, reportDir string) error {
	if err := OutsideCheckpoint(ref.Dir, "--out-dir, --name or --report-dir", ws, reportDir); err != nil {
		return err
	}
	switch {
	case ref.CacheDir != "":
		spec.Checkpoint = scaffold.Checkpoint{Root: scaffold.RootPhase0Cache, Path: ref.CacheDir}
	case ref.Local:
		rel, err := filepath.Rel(ws, ref.Dir)
		if err != nil {
			return fmt.Errorf("recording %s relative to the workspace %s: %w", ref.Dir, ws, err)
		}
		spec.ModelID = filepath.Base(ref.ID) // the name the user gave (a symlink's own)
		spec.Checkpoint = scaffold.Checkpoint{Root: scaffold.RootWorkspace, Path: filepath.ToSlash(rel)}
	}
	return nil
}

// OutsideCheckpoint refuses a folder phase0 would write (a workspace, a
// report dir, reference's --out; "" for none) that is inside the model
// folder modelDir, or is it, symlinks resolved: its files would change the
// checkpoint phase0 validates. flags names the flags that place them.
func OutsideCheckpoint(modelDir, flags string, paths ...string) error {
	model, err := realPath(modelDir)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		abs, err := realPath(p)
		if err != nil {
			return err
		}
		if rel, err := filepath.Rel(model, abs); err == nil && (filepath.IsLocal(rel) || rel == ".") {
			return fmt.Errorf("%s is inside the model folder %s: phase0 would write into the checkpoint it validates (and every later run would see it changed); give %s a folder outside it", abs, model, flags)
		}
	}
	return nil
}

// realPath is p made absolute with every symlink resolved, for the part of
// it that exists (a folder not made yet is joined as it is): a workspace
// reached through a link into the model folder is inside it.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for d := abs; ; d = filepath.Dir(d) {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(real, rest), nil
		}
		if filepath.Dir(d) == d {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(d), rest)
	}
}
