package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoModel means the MODEL argument names nothing phase0 can find.
var ErrNoModel = errors.New("model not found")

// resolvedModel is a MODEL argument turned into a local folder.
type resolvedModel struct {
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

// resolveModel turns a MODEL argument into a local folder.
func resolveModel(ctx context.Context, s *Settings, arg string) (*resolvedModel, error) {
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
		abs, err := filepath.Abs(arg)
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", arg, err)
		}
		return &resolvedModel{Dir: abs, ID: abs, Local: true}, nil
	}
	// Only the part before '@' counts: a revision such as refs/pr/1 has
	// slashes of its own.
	id, _, _ := strings.Cut(arg, "@")
	if strings.HasPrefix(arg, "/") || strings.HasPrefix(arg, ".") || strings.HasPrefix(arg, "~") || strings.Count(id, "/") > 1 {
		return nil, fmt.Errorf("%w: no such folder %s", ErrNoModel, arg)
	}
	return resolveHub(ctx, s, arg)
}
