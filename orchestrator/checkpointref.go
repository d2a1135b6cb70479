package orchestrator

import (
	"fmt"
	"path/filepath"

	"phase0/scaffold"
)

// recordCheckpoint tells the generated loader where the validated checkpoint
// is without writing an absolute path into files meant to be committed: a
// hub snapshot by id and revision (nothing to record), the default model
// relative to phase0's cache, a local folder by its name and its path
// relative to the workspace.
func recordCheckpoint(spec *scaffold.Spec, ref *resolvedModel, ws string) error {
	switch {
	case ref.CacheDir != "":
		spec.Checkpoint = scaffold.Checkpoint{Root: scaffold.RootPhase0Cache, Path: ref.CacheDir}
	case ref.Local:
		rel, err := filepath.Rel(ws, ref.Dir)
		if err != nil {
			return fmt.Errorf("recording %s relative to the workspace %s: %w", ref.Dir, ws, err)
		}
		spec.ModelID = filepath.Base(ref.Dir)
		spec.Checkpoint = scaffold.Checkpoint{Root: scaffold.RootWorkspace, Path: filepath.ToSlash(rel)}
	}
	return nil
}
