package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"phase0/modellist"
	"phase0/orchestrator"
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
func runList(ctx context.Context, cmd *cobra.Command, s *orchestrator.Settings, args []string, version string, overrides map[string]any) (*orchestrator.Batch, error) {
	if key, value, why := orchestrator.ListConflict(s); key != "" {
		origin := (&parser{cmd: cmd, overrides: overrides}).origin(key)
		return nil, fmt.Errorf("%s %q does not apply to a model list: %s; drop it, or run that model on its own", origin, value, why)
	}
	entries, err := modellist.Expand(args)
	if err != nil {
		return nil, err
	}
	return orchestrator.RunMany(ctx, s, entries, version)
}

// printBatch prints the list's table, or its one JSON object.
func printBatch(w io.Writer, b *orchestrator.Batch, asJSON bool) error {
	if asJSON {
		out, err := json.MarshalIndent(b, "", "  ")
		if err != nil {
			return fmt.Errorf("encoding the list report: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", out)
		return err
	}
	_, err := io.WriteString(w, b.Text())
	return err
}
