package orchestrator

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

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

// withoutLocalPaths rewrites the blockers that go into TODO.md and
// phase_timing.md (files meant to be committed) so that they name the
// checkpoint, the workspace and the llms folder instead of their absolute
// paths, which error messages from the loader and the runner carry.
func withoutLocalPaths(lines []string, st *state) []string {
	names := map[string]string{}
	if ref := st.facts.model; ref != nil && ref.Dir != "" {
		names[ref.Dir] = "<checkpoint>"
	}
	if w := st.facts.workspace; w != nil && w.dir != "" {
		names[w.dir] = "<workspace>"
		names[filepath.Dir(w.dir)] = "<llms>"
	}
	paths := make([]string, 0, len(names))
	for p := range names {
		if filepath.IsAbs(p) && p != "/" {
			paths = append(paths, p)
		}
	}
	// Longest first: the workspace lies inside the llms folder.
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	out := make([]string, len(lines))
	for i, l := range lines {
		for _, p := range paths {
			l = strings.ReplaceAll(l, p, names[p])
		}
		out[i] = l
	}
	return out
}
