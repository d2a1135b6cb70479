package model

import (
	"fmt"
	"path/filepath"
)

// LocalFolder turns a MODEL argument naming a folder into its id and the
// folder every stage reads. The id is the argument made absolute (a
// symlink's own name names the workspace); dir is that path with every
// symlink resolved, once, so that each stage — the reuse stamp, the gates,
// the Python worker, the reference's fingerprint — reads and stamps the
// same real folder (a walk of a symlink sees the link, not the files).
func LocalFolder(arg string) (id, dir string, err error) {
	id, err = filepath.Abs(arg)
	if err != nil {
		return "", "", fmt.Errorf("resolving %s: %w", arg, err)
	}
	dir, err = filepath.EvalSymlinks(id)
	if err != nil {
		return "", "", fmt.Errorf("resolving %s: %w", arg, err)
	}
	return id, dir, nil
}
