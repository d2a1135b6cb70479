package scaffold

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"phase0/internal/atomicfile"
	"phase0/internal/boundedfile"
)

// ManifestName is the file, at the workspace root, where phase0 records the
// sha256 of every file it wrote. A file whose content no longer matches is
// the user's.
const ManifestName = ".phase0-manifest.json"

// Result says what Write did with each file (workspace-relative paths).
type Result struct {
	Written   []string // created or replaced
	Unchanged []string // already held exactly the rendered content
	Kept      []string // KeepExisting documents that already existed
	// Foreign lists files phase0 would have written but left alone because
	// their bytes are not phase0's: never written by it (upstream's own
	// model, a hand-made file) or changed since it wrote them.
	Foreign []string
	// HelpersKept lists the functions in <name>_cpu_helpers.py; filled by generate.
	HelpersKept []string
}

type manifest struct {
	Files map[string]string `json:"files"` // relative path -> sha256 hex of what phase0 wrote
}

// generate renders spec and writes it into workspaceDir (usually <llms>/<name>).
func generate(workspaceDir string, spec Spec) (Result, error) {
	files, err := Render(spec)
	if err != nil {
		return Result{}, err
	}
	res, err := Write(workspaceDir, files)
	if err != nil {
		return res, err
	}
	res.HelpersKept = HelpersKept(spec)
	return res, nil
}

// Write puts files into workspaceDir. An existing file is replaced only when
// its bytes are the ones phase0 last wrote (per the manifest); any other
// existing file is the user's or upstream's and is never replaced — it is
// listed in Result.Foreign. Each file is written atomically and the
// manifest is updated after each one, so an interrupted run never makes a
// file phase0 wrote look foreign.
func Write(workspaceDir string, files []File) (Result, error) {
	var res Result
	m, err := readManifest(workspaceDir)
	if err != nil {
		return res, err
	}

	type pending struct {
		rel  string
		data []byte
	}
	var toWrite []pending
	adopt := false
	seen := map[string]bool{}
	for _, f := range files {
		rel, err := cleanRel(f.Path)
		if err != nil {
			return Result{}, err
		}
		if seen[rel] {
			return Result{}, fmt.Errorf("scaffold: %s is listed twice", rel)
		}
		seen[rel] = true

		current, err := boundedfile.Read(filepath.Join(workspaceDir, filepath.FromSlash(rel)), maxOwnedFile)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			toWrite = append(toWrite, pending{rel, f.Data})
			continue
		case err != nil:
			return Result{}, fmt.Errorf("scaffold: read %s: %w", rel, err)
		}
		currentSum := sha256Hex(current)
		switch recorded, known := m.Files[rel]; {
		case currentSum == sha256Hex(f.Data):
			res.Unchanged = append(res.Unchanged, rel)
			// Identical content counts as ours from now on, even if an
			// older run's manifest was lost.
			if !known || recorded != currentSum {
				m.Files[rel] = currentSum
				adopt = true
			}
		case f.KeepExisting:
			res.Kept = append(res.Kept, rel)
		case known && recorded == currentSum:
			toWrite = append(toWrite, pending{rel, f.Data})
		case known:
			res.Foreign = append(res.Foreign, rel+" (changed since phase0 wrote it)")
		default:
			res.Foreign = append(res.Foreign, rel+" (not written by phase0)")
		}
	}

	if adopt {
		if err := writeManifest(workspaceDir, m); err != nil {
			return res, err
		}
	}

	for _, p := range toWrite {
		target := filepath.Join(workspaceDir, filepath.FromSlash(p.rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return res, fmt.Errorf("scaffold: create directory for %s: %w", p.rel, err)
		}
		if err := atomicfile.Write(target, p.data); err != nil {
			return res, err
		}
		res.Written = append(res.Written, p.rel)
		m.Files[p.rel] = sha256Hex(p.data)
		if err := writeManifest(workspaceDir, m); err != nil {
			return res, err
		}
	}
	return res, nil
}

// RecordWrite records data as phase0's own content of relPath, so that a
// later Write does not take phase0's edits (the Phase 0 entry, the ticked
// box) for the user's.
func RecordWrite(workspaceDir, relPath string, data []byte) error {
	rel, err := cleanRel(relPath)
	if err != nil {
		return err
	}
	m, err := readManifest(workspaceDir)
	if err != nil {
		return err
	}
	m.Files[rel] = sha256Hex(data)
	return writeManifest(workspaceDir, m)
}

func cleanRel(p string) (string, error) {
	clean := path.Clean(filepath.ToSlash(p))
	if p == "" || path.IsAbs(clean) || filepath.IsAbs(p) || clean == "." || clean == ".." ||
		strings.HasPrefix(clean, "../") || clean == ManifestName {
		return "", fmt.Errorf("scaffold: file path %q must be relative and stay inside the workspace", p)
	}
	return clean, nil
}

func readManifest(workspaceDir string) (manifest, error) {
	m := manifest{Files: map[string]string{}}
	p := filepath.Join(workspaceDir, ManifestName)
	data, err := boundedfile.Read(p, maxManifest)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("scaffold: read manifest: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("scaffold: manifest %s is not valid JSON (%v); restore or delete it", p, err)
	}
	if m.Files == nil {
		m.Files = map[string]string{}
	}
	return m, nil
}

func writeManifest(workspaceDir string, m manifest) error {
	data, err := encodeManifest(m)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(workspaceDir, 0o755); err != nil {
		return fmt.Errorf("scaffold: create workspace %s: %w", workspaceDir, err)
	}
	return atomicfile.Write(filepath.Join(workspaceDir, ManifestName), data)
}

func encodeManifest(m manifest) ([]byte, error) {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("scaffold: encode manifest: %w", err)
	}
	return append(data, '\n'), nil
}

// ManifestAfter is the manifest of workspaceDir with files (workspace-
// relative path → content) recorded as phase0's own: what a record that
// writes those files in one commit writes as the manifest beside them.
func ManifestAfter(workspaceDir string, files map[string][]byte) ([]byte, error) {
	m, err := readManifest(workspaceDir)
	if err != nil {
		return nil, err
	}
	for p, data := range files {
		rel, err := cleanRel(p)
		if err != nil {
			return nil, err
		}
		m.Files[rel] = sha256Hex(data)
	}
	return encodeManifest(m)
}

// WrittenByPhase0 says whether data is the content phase0 last recorded for
// path in its workspace's manifest (false outside a phase0 workspace).
func WrittenByPhase0(path string, data []byte) bool {
	ws, rel, ok := findWorkspace(path)
	if !ok {
		return false
	}
	m, err := readManifest(ws)
	return err == nil && m.Files[rel] == sha256Hex(data)
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
