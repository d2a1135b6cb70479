package orchestrator

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"

	"phase0/scaffold"
)

// A folder phase0 did not create (wsfolder.Foreign) is validated, never
// written into: its lock and its record live here, outside it.

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
