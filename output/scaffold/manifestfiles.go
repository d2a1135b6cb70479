package scaffold

import (
	"maps"
	"slices"
)

// ManifestFiles lists the workspace-relative paths the manifest records as
// phase0's, sorted; none when the workspace has no manifest. `run` uses it to
// tell whether the generated files are still the ones a recorded verdict was
// reached with.
func ManifestFiles(workspaceDir string) ([]string, error) {
	m, err := readManifest(workspaceDir)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(m.Files)), nil
}
