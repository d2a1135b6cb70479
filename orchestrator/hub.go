package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"phase0/hfcache"
	"phase0/worker"
)

// ErrHub marks a hub id that could not be resolved or downloaded.
var ErrHub = errors.New("model not available from the hub")

// downloadResult is ops.download's answer.
type downloadResult struct {
	Status      string `json:"status"`
	Code        string `json:"code"`
	Message     string `json:"message"`
	SnapshotDir string `json:"snapshot_dir"`
	Revision    string `json:"revision"`
	Bytes       int64  `json:"bytes"`
}

// resolveHub resolves org/name[@revision] through the HF cache, natively, and
// downloads what is missing through huggingface_hub in the worker unless
// HF_HUB_OFFLINE is set.
func resolveHub(ctx context.Context, s *Settings, arg string) (*resolvedModel, error) {
	ref, err := hfcache.ParseID(arg)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is neither a folder nor a hub id (org/name[@revision]): %w", ErrNoModel, arg, err)
	}
	cache := hfcache.CacheDir(os.Getenv)
	res, err := hfcache.Resolve(cache, ref)
	if err == nil && res.Complete() {
		return &resolvedModel{Dir: res.Dir, Revision: res.Revision, ID: ref.ID}, nil
	}
	if errors.Is(err, hfcache.ErrBadRevision) {
		return nil, fmt.Errorf("%w: %w", ErrHub, err)
	}
	why := "not in the cache"
	if err == nil {
		why = "cached without " + strings.Join(res.Missing, ", ")
	}
	if offline() {
		return nil, fmt.Errorf("%w: %s is %s (%s) and HF_HUB_OFFLINE is set; download it first or unset HF_HUB_OFFLINE", ErrHub, ref.ID, why, cache)
	}
	fmt.Fprintf(s.Progress, "phase0: %s is %s; downloading safetensors, config and tokenizer through huggingface_hub\n", ref.ID, why)
	req, err := request("download", map[string]any{"repo_id": ref.ID, "revision": nilIfEmpty(ref.Revision), "cache_dir": cache})
	if err != nil {
		return nil, err
	}
	var dl downloadResult
	if _, err := s.call(ctx, []worker.Request{req}, &dl); err != nil {
		return nil, fmt.Errorf("%w: downloading %s: %w", ErrHub, ref.ID, err)
	}
	if dl.Status != "ok" {
		return nil, fmt.Errorf("%w: %s: %s (%s)", ErrHub, ref.ID, dl.Message, dl.Code)
	}
	return &resolvedModel{Dir: dl.SnapshotDir, Revision: dl.Revision, ID: ref.ID}, nil
}

func offline() bool {
	v := strings.ToLower(strings.TrimSpace(os.Getenv("HF_HUB_OFFLINE")))
	return v != "" && v != "0" && v != "false" && v != "no" && v != "off"
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
