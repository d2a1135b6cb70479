package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"phase0/read/modellist"
	"phase0/run/listrun"
	"phase0/run/orchestrator"
)

// takesList says whether a command accepts several models (MODEL... or @FILE).
func takesList(use string) bool { return use == "inspect" || use == "run" }

// isList says whether the arguments name a list rather than one model.
func isList(args []string) bool {
	return len(args) > 1 || len(args) == 1 && strings.HasPrefix(args[0], "@")
}

// runList is `phase0 run @hf_models.txt` (or several MODEL arguments): each
// model in turn. A setting that names one model's files (--name,
// --report-dir) is refused before anything runs.
func (inv *invocation) runList(ctx context.Context, cmd *cobra.Command, s *orchestrator.Settings, args []string, f fleet) (*listrun.Batch, error) {
	if key, value, why := listrun.ListConflict(s); key != "" {
		return nil, fmt.Errorf("%s %q does not apply to a model list: %s; drop it, or run that model on its own", inv.origins.of(key), value, why)
	}
	entries, err := f.entries(args)
	if err != nil {
		return nil, err
	}
	b, err := listrun.RunMany(ctx, s, entries, inv.version)
	if err != nil {
		return nil, err
	}
	b.Shard, b.Listed = f.shard.String(), listed(args)
	b.SetMap(listrun.JudgeMap(s.LLMSDir, args, f.shard))
	return b, nil
}

// listed is how many models the arguments name before sharding (0 when
// they cannot be read; the run reported that already).
func listed(args []string) int {
	entries, err := modellist.Expand(args)
	if err != nil {
		return 0
	}
	return len(entries)
}
