package orchestrator

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"phase0/scaffold"
)

// A folder phase0 did not create — upstream's qwen3_0_6b/, a hand-written
// model — is validated, never written into: it stays byte for byte as it
// was, with no new file (no lock, no manifest, no report, no reference, no
// TODO.md; a `git add -A` there picks up nothing). Its lock and its record
// live in phase0's cache (or --report-dir), and the run prints where. The
// one exception is the skill's update protocol: a folder mid-deployment
// (a TODO.md with the phase checklist and a progress.md) gets its Phase 0
// entry and tick on PASS, and nothing else.

// foreignFolder says whether ws is such a folder: it exists and holds no
// phase0 manifest. A workspace phase0 generated keeps its manifest, and its
// records, even when the user has since edited its module.
func foreignFolder(ws string) bool {
	if _, err := os.Lstat(filepath.Join(ws, scaffold.ManifestName)); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	fi, err := os.Stat(ws)
	return err == nil && fi.IsDir()
}

// outsideDir is where the lock and record of a foreign folder live:
// <cache>/validated/<name>-<hash of the folder's path>.
func (s *Settings) outsideDir(ws string) (string, error) {
	cache, err := s.cacheRoot()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(ws))
	return filepath.Join(cache, "validated", filepath.Base(ws)+"-"+hex.EncodeToString(sum[:])[:12]), nil
}

// outsideRecordDir is where one model's record of a foreign folder lives:
// a folder of its own under outsideDir, so that the base and the instruct
// id an upstream folder serves keep separate verdicts.
func (s *Settings) outsideRecordDir(ws, modelID string) (string, error) {
	out, err := s.outsideDir(ws)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(modelID))
	return filepath.Join(out, scaffold.DeriveName(modelID)+"-"+hex.EncodeToString(sum[:])[:8]), nil
}

// midDeployment says whether a foreign folder follows the skill's layout
// (a TODO.md with the phase checklist, and docs/development_progress/
// progress.md): then a PASS is entered there as the skill asks.
func midDeployment(ws string) bool {
	if _, err := os.Stat(filepath.Join(ws, "docs", "development_progress", "progress.md")); err != nil {
		return false
	}
	ok, err := scaffold.HasPhaseChecklist(filepath.Join(ws, "TODO.md"))
	return err == nil && ok
}
