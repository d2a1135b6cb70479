package cli

import (
	"io"
	"slices"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"phase0/configs"
)

// invocationFlags are the flags that are not settings: they steer one
// invocation (--config, --json; a list's --junit and --shard) or only
// `reference` (--dtype, --out), and cobra's own.
var invocationFlags = map[string][]string{
	"config": {configs.Root}, "json": {configs.Root}, "help": nil, "version": nil,
	"dtype": {"reference"}, "out": {"reference"},
	"junit": {"inspect", "run"}, "shard": {"inspect", "run"},
}

// Every flag of every command is a configs.Table row that names the
// command (or an invocation flag), and every row's flag is on its commands.
func TestEveryFlagHasATableRow(t *testing.T) {
	root := newRoot(&invocation{stdout: io.Discard, stderr: io.Discard, v: viper.New()})
	commands := append([]*cobra.Command{root}, root.Commands()...)
	for _, c := range commands {
		name := c.Name()
		check := func(f *pflag.Flag) {
			if where, ok := invocationFlags[f.Name]; ok {
				if where != nil && !slices.Contains(where, name) && !slices.Contains(where, configs.Root) {
					t.Errorf("phase0 %s --%s: invocationFlags lists it for %v only", name, f.Name, where)
				}
				return
			}
			row, ok := configs.Lookup(f.Name) // a row's flag is its key with dashes (TestTableRows)
			if !ok {
				for _, r := range configs.Table {
					if r.Flag == f.Name {
						row, ok = r, true
					}
				}
			}
			if !ok {
				t.Errorf("phase0 %s --%s has no row in configs.Table: declare the setting there (or, for a flag of one invocation, in invocationFlags)", name, f.Name)
				return
			}
			if !row.On(name) {
				t.Errorf("phase0 %s --%s: configs.Table row %s gives it to %v only", name, f.Name, row.Key, row.Commands)
			}
		}
		c.LocalFlags().VisitAll(check)
	}
	for _, row := range configs.Table {
		for _, c := range commands {
			if row.On(c.Name()) && c.Flags().Lookup(row.Flag) == nil && c.InheritedFlags().Lookup(row.Flag) == nil {
				t.Errorf("configs.Table gives --%s to %s, which has no such flag", row.Flag, c.Name())
			}
		}
	}
	for _, row := range configs.Table {
		for _, want := range row.Commands {
			if want != configs.Root && !slices.ContainsFunc(commands, func(c *cobra.Command) bool { return c.Name() == want }) {
				t.Errorf("configs.Table row %s names command %q, which phase0 does not have", row.Key, want)
			}
		}
	}
}
