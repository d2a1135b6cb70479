package scaffold

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"phase0/gate/reference"
	"phase0/internal/boundedfile"
)

// Bounds on what phase0 reads from a workspace: a generated module is tens of
// KiB, a manifest a few hundred bytes.
const (
	maxOwnedFile   = 16 << 20
	maxManifest    = 1 << 20
	maxModelIDScan = 1 << 20
)

// LockName is the workspace's lock file (see internal/wslock); it is never
// removed, so it marks a folder phase0 has used.
const LockName = ".phase0.lock"

// ReservedNames are folders of the mlir-air llms tree that are not model
// workspaces, and names that would shadow what the tree puts on sys.path
// (verify/runners). A workspace may never take one of them.
var ReservedNames = []string{"verify", "shared", "docs", "bench", "runners", "infra", "builders", "scripts", "tests", "tools", "build"}

// Ownership says whose bytes a workspace file holds.
type Ownership int

const (
	Absent  Ownership = iota // no such file
	Ours                     // exactly the bytes phase0 last wrote (per the manifest)
	Foreign                  // never written by phase0, or changed since
)

// Owner tells whether rel in workspaceDir is absent, phase0's, or someone else's.
func Owner(workspaceDir, rel string) (Ownership, error) {
	clean, err := cleanRel(rel)
	if err != nil {
		return Absent, err
	}
	data, err := boundedfile.Read(filepath.Join(workspaceDir, filepath.FromSlash(clean)), maxOwnedFile)
	if errors.Is(err, fs.ErrNotExist) {
		return Absent, nil
	}
	if err != nil {
		return Absent, fmt.Errorf("scaffold: read %s: %w", clean, err)
	}
	m, err := readManifest(workspaceDir)
	if err != nil {
		return Absent, err
	}
	if sum, ok := m.Files[clean]; ok && sum == sha256Hex(data) {
		return Ours, nil
	}
	return Foreign, nil
}

// modelIDLine is a module-level `MODEL_ID = "org/name"` (an annotation is
// allowed), the constant the generated weights module defines; black puts a
// long one in parentheses, on a line of its own.
var modelIDLine = regexp.MustCompile(`(?m)^MODEL_ID\s*(?::[^=\n]*)?=\s*(?:\(\s*)?(?:"((?:[^"\\\n]|\\")+)"|'((?:[^'\\\n]|\\')+)')`)

// modelIDOf is the MODEL_ID a modelIDLine match assigns (either quote
// style, its escaped quote unescaped).
func modelIDOf(m [][]byte) string {
	if len(m[2]) > 0 {
		return strings.ReplaceAll(string(m[2]), `\'`, "'")
	}
	return strings.ReplaceAll(string(m[1]), `\"`, `"`)
}

// ModelIDIn reads the MODEL_ID a weights module assigns, textually (the
// module is never imported here); "" when it assigns none.
func ModelIDIn(path string) (string, error) {
	b, err := boundedfile.Read(path, maxOwnedFile)
	if err != nil {
		return "", fmt.Errorf("scaffold: read %s: %w", path, err)
	}
	if m := modelIDLine.FindSubmatch(b[:min(len(b), maxModelIDScan)]); m != nil {
		return modelIDOf(m), nil
	}
	return "", nil
}

// checkpointPathLine is the generated module's `CHECKPOINT_PATH = "…"`: the
// local checkpoint's folder, relative to the workspace (or phase0's cache).
var checkpointPathLine = regexp.MustCompile(`(?m)^CHECKPOINT_PATH\s*(?::[^=\n]*)?=\s*(?:\(\s*)?(?:"((?:[^"\\\n]|\\")+)"|'((?:[^'\\\n]|\\')+)')`)

// CheckpointPathIn reads the CHECKPOINT_PATH a weights module assigns,
// textually; "" when it assigns none (a hub model's, upstream's).
func CheckpointPathIn(path string) (string, error) {
	b, err := boundedfile.Read(path, maxOwnedFile)
	if err != nil {
		return "", fmt.Errorf("scaffold: read %s: %w", path, err)
	}
	if m := checkpointPathLine.FindSubmatch(b[:min(len(b), maxModelIDScan)]); m != nil {
		return modelIDOf(m), nil
	}
	return "", nil
}

// DefinesFunc reports whether the Python module at path defines a top-level
// function name, read as text (bounded; never imported here).
func DefinesFunc(path, name string) bool {
	b, err := boundedfile.Read(path, maxOwnedFile)
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "def "+name+"(") {
			return true
		}
	}
	return false
}

// ModelIDOf is the MODEL_ID the rendered weights module among files assigns.
func ModelIDOf(files []File, spec Spec) string {
	for _, f := range files {
		if f.Path == spec.Name+"_weights.py" {
			if m := modelIDLine.FindSubmatch(f.Data); m != nil {
				return modelIDOf(m)
			}
		}
	}
	return ""
}

// CheckFolder refuses a workspace name that would write into a folder of
// the llms tree that is not a model workspace: a reserved name, a file, or
// an existing folder with neither phase0's manifest nor <name>_weights.py
// (an empty folder, or one holding only what phase0 leaves before it
// generates a workspace — Leftovers — is accepted).
func CheckFolder(llmsDir, name string) error {
	if slices.Contains(ReservedNames, strings.ToLower(name)) {
		return fmt.Errorf("workspace name %q is one of the llms tree's own folders (%s), not a model workspace; pass --name <model_name>",
			name, strings.Join(ReservedNames, ", "))
	}
	dir := filepath.Join(llmsDir, name)
	st, err := os.Stat(dir) // a symlink to a folder is that folder
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("workspace %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("workspace %s exists and is not a folder (it is %s); pass --name to pick another name", dir, boundedfile.Kind(st.Mode()))
	}
	for _, marker := range []string{ManifestName, name + "_weights.py"} {
		if _, err := os.Lstat(filepath.Join(dir, marker)); err == nil {
			return nil
		}
	}
	if _, err := Leftovers(dir); err != nil {
		return fmt.Errorf("%s exists but is not a model workspace (no %s, no %s_weights.py; %w); phase0 does not write into it — pass --name to pick another name",
			dir, ManifestName, name, err)
	}
	return nil
}

// ReferenceDirName is the workspace's recorded reference (docs/reference.md),
// which `phase0 reference` records before any workspace is generated.
const ReferenceDirName = "reference"

// Leftovers says whether dir holds only what phase0 leaves in a workspace
// folder before it generates one: its lock, its temporaries, and the
// reference `phase0 reference` recorded there (a phase0 recording of role
// reference that carries its key). ours is true when the lock is among
// them: phase0 has used the folder, so it is phase0's own. err names the
// first entry that is not phase0's.
func Leftovers(dir string) (ours bool, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		switch n := e.Name(); {
		case n == LockName:
			ours = e.Type().IsRegular()
		case strings.HasPrefix(n, ".") && strings.Contains(n, ".tmp-"):
		case n == ReferenceDirName && e.IsDir() && ownRecording(filepath.Join(dir, n)):
		default:
			return false, fmt.Errorf("%s is not phase0's", n)
		}
	}
	return ours, nil
}

// ownRecording: a folder phase0's reference stage recorded (its key stamped
// in reference.json).
func ownRecording(dir string) bool {
	m, err := reference.ReadMeta(dir)
	return err == nil && m.Role == reference.RoleReference && m.KeySHA256 != ""
}
