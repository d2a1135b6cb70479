package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"phase0/hfcache"
	"phase0/hubmeta"
	"phase0/model"
	"phase0/ops"
)

// ErrHub marks a hub id that could not be resolved or downloaded.
var ErrHub = errors.New("model not available from the hub")

// resolveHub resolves org/name[@revision] through the HF cache, natively, and
// downloads what is missing through huggingface_hub in the worker unless
// HF_HUB_OFFLINE is set.
func resolveHub(ctx context.Context, s *Settings, arg string) (*resolvedModel, error) {
	ref, err := hfcache.ParseID(arg)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is neither a folder nor a hub id (org/name[@revision]): %w", ErrNoModel, arg, err)
	}
	cache := hfcache.CacheDir(s.getenv)
	res, err := hfcache.Resolve(cache, ref)
	if err == nil && (res.Complete() || model.RefusedIn(os.DirFS(res.Dir))) {
		return &resolvedModel{Dir: res.Dir, Revision: res.Revision, ID: ref.ID}, nil
	}
	if errors.Is(err, hfcache.ErrBadRevision) {
		return nil, fmt.Errorf("%w: %w", ErrHub, err)
	}
	why := "not in the cache"
	if err == nil {
		why = "cached without " + strings.Join(res.Missing, ", ")
	}
	if s.HeadersOnly {
		return resolveRemote(ctx, s, ref)
	}
	if hfcache.Offline(s.getenv) {
		return nil, fmt.Errorf("%w: %s is %s (%s) and the hub is switched off (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE); download it first or unset them", ErrHub, ref.ID, why, cache)
	}
	fmt.Fprintf(s.Progress, "phase0: %s is %s; downloading safetensors, config and tokenizer through huggingface_hub\n", ref.ID, why)
	py := s.opsClient()
	defer py.Close()
	dl, err := py.Download(ctx, ops.DownloadArgs{RepoID: ref.ID, Revision: nilIfEmpty(ref.Revision), CacheDir: cache})
	if err != nil {
		return nil, fmt.Errorf("%w: downloading %s: %w", ErrHub, ref.ID, err)
	}
	if dl.Status != "ok" {
		return nil, fmt.Errorf("%w: %s (%s)", ErrHub, dl.Message, deref(dl.Code))
	}
	// The cache is the truth: what was downloaded must now resolve natively,
	// or every later run would download again (and fail offline).
	after, err := hfcache.Resolve(cache, hfcache.Ref{ID: ref.ID, Org: ref.Org, Name: ref.Name, Revision: deref(dl.Revision)})
	if err != nil {
		return nil, fmt.Errorf("%w: %s was downloaded to %s but does not resolve from the cache: %w", ErrHub, ref.ID, deref(dl.SnapshotDir), err)
	}
	if !after.Complete() {
		return nil, fmt.Errorf("%w: %s has no %s (the download fetched %s)", ErrHub, ref.ID, strings.Join(after.Missing, ", "), deref(dl.SnapshotDir))
	}
	return &resolvedModel{Dir: after.Dir, Revision: after.Revision, ID: ref.ID}, nil
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// resolveRemote reads only config.json and the safetensors headers from the
// hub (HTTP range requests, cached under phase0's cache by commit), for an
// inspection that needs no weights.
func resolveRemote(ctx context.Context, s *Settings, ref hfcache.Ref) (*resolvedModel, error) {
	cache, err := s.cacheRoot()
	if err != nil {
		return nil, err
	}
	c, err := hubmeta.New(hubmeta.Options{Endpoint: s.getenv("HF_ENDPOINT"), Token: s.hfToken(), Offline: hfcache.Offline(s.getenv), CacheDir: cache})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHub, err)
	}
	m, err := c.Resolve(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHub, err)
	}
	fsys, err := c.FS(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHub, err)
	}
	return &resolvedModel{Dir: "hf://" + ref.ID + "@" + m.Commit, Revision: m.Commit, ID: ref.ID, Remote: true, FS: fsys}, nil
}

// hfToken is the hub token, found as huggingface_hub finds it.
func (s *Settings) hfToken() string {
	tok, _ := hfcache.Token(s.getenv)
	return tok
}
