package orchestrator

import (
	"context"

	"phase0/run/resolve"
)

// DefaultModel is the MODEL name for the bundled real checkpoint.
const DefaultModel = resolve.DefaultModel

// resolvedModel is a MODEL argument turned into a local folder.
type resolvedModel = resolve.Model

// resolveModel turns a MODEL argument into a local folder (resolve.Arg).
func resolveModel(ctx context.Context, s *Settings, arg string) (*resolvedModel, error) {
	return resolve.Arg(ctx, &resolve.Options{Getenv: s.Getenv, Cache: s.python().Cache, HeadersOnly: s.HeadersOnly, Progress: s.Progress, Ops: s.opsClient}, arg)
}
