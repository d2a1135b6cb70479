package orchestrator

import "phase0/wsfolder"

// A folder phase0 did not create (wsfolder.Foreign) is validated, never
// written into: its lock and its record live outside it, under phase0's
// cache (wsfolder.OutsideDir).

// outsideDir is where the lock and record of a foreign folder live.
func (s *Settings) outsideDir(ws string) (string, error) {
	cache, err := s.cacheRoot()
	if err != nil {
		return "", err
	}
	return wsfolder.OutsideDir(cache, ws), nil
}

// outsideRecordDir is where one model's record of a foreign folder lives.
func (s *Settings) outsideRecordDir(ws, modelID string) (string, error) {
	cache, err := s.cacheRoot()
	if err != nil {
		return "", err
	}
	return wsfolder.OutsideRecordDir(cache, ws, modelID), nil
}
