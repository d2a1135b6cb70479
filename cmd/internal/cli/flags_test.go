package cli

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"phase0/run/settings"
)

// invocationFlags are the flags that are not settings: they steer one
// invocation (--config, --json; a list's --junit and --shard) or only
// `reference` (--dtype, --out), and cobra's own.
var invocationFlags = map[string][]string{
	"config": {"preflight", "inspect", "baseline", "run", "reference"}, "json": {settings.Root}, "help": nil, "version": nil,
	"dtype": {"reference"}, "out": {"reference"},
	"junit": {"inspect", "run"}, "shard": {"inspect", "run"},
}

// Every flag of every command is a settings.Table row that names the
// command (or an invocation flag), and every row's flag is on its commands.
func TestEveryFlagHasATableRow(t *testing.T) {
	root := newRoot(&invocation{stdout: io.Discard, stderr: io.Discard})
	commands := append([]*cobra.Command{root}, root.Commands()...)
	for _, c := range commands {
		name := c.Name()
		check := func(f *pflag.Flag) {
			if where, ok := invocationFlags[f.Name]; ok {
				if where != nil && !slices.Contains(where, name) && !slices.Contains(where, settings.Root) {
					t.Errorf("phase0 %s --%s: invocationFlags lists it for %v only", name, f.Name, where)
				}
				return
			}
			row, ok := settings.Lookup(f.Name) // a row's flag is its key with dashes (TestTableRows)
			if !ok {
				for _, r := range settings.Table {
					if r.Flag == f.Name {
						row, ok = r, true
					}
				}
			}
			if !ok {
				t.Errorf("phase0 %s --%s has no row in settings.Table: declare the setting there (or, for a flag of one invocation, in invocationFlags)", name, f.Name)
				return
			}
			if !row.On(name) {
				t.Errorf("phase0 %s --%s: settings.Table row %s gives it to %v only", name, f.Name, row.Key, row.Commands)
			}
		}
		c.LocalFlags().VisitAll(check)
	}
	for _, row := range settings.Table {
		for _, c := range commands {
			if row.On(c.Name()) && c.Flags().Lookup(row.Flag) == nil && c.InheritedFlags().Lookup(row.Flag) == nil {
				t.Errorf("settings.Table gives --%s to %s, which has no such flag", row.Flag, c.Name())
			}
		}
	}
	for _, row := range settings.Table {
		for _, want := range row.Commands {
			if want != settings.Root && !slices.ContainsFunc(commands, func(c *cobra.Command) bool { return c.Name() == want }) {
				t.Errorf("settings.Table row %s names command %q, which phase0 does not have", row.Key, want)
			}
		}
	}
}

// --help names each setting flag's type from its row's kind (--workers int,
// --timeout duration, --max-perplexity-ratio float) and a number's range.
func TestHelpShowsTypedFlags(t *testing.T) {
	for _, row := range settings.Table {
		if row.Flag == "" {
			continue
		}
		command := commandFor(row)
		code, out, _ := run(t, command, "--help")
		if code != 0 {
			t.Fatalf("%s --help: exit %d", command, code)
		}
		want := "--" + row.Flag + " " + row.Kind.FlagType() + " "
		if row.Kind == settings.Bool {
			want = "--" + row.Flag + " " // pflag shows a bool flag bare
		}
		if !strings.Contains(out, want) {
			t.Errorf("phase0 %s --help does not show %q:\n%s", command, want, out)
		}
		if row.Range != (settings.Range{}) && !strings.Contains(out, "in "+row.Range.String()) {
			t.Errorf("phase0 %s --help does not show --%s's range %v", command, row.Flag, row.Range)
		}
	}
}

// A setting's flag is only on the commands that read it: elsewhere it is
// an unknown flag (exit 2), never accepted and ignored.
func TestFlagsOnlyWhereRead(t *testing.T) {
	ref := t.TempDir()
	for _, tc := range [][]string{
		{"compare", ref, ref, "--timeout", "soon"},
		{"compare", ref, ref, "--config", "/nonexistent"},
		{"inspect", ref, "--timeout", "5m"},
		{"inspect", ref, "--python", "/usr/bin/python3"},
		{"preflight", "--workers", "2"},
	} {
		code, _, stderr := run(t, tc...)
		if code != 2 || !strings.Contains(stderr, "unknown flag: "+tc[len(tc)-2]) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2, unknown flag", tc, code, stderr)
		}
	}
	t.Setenv("PHASE0_WORKERS", "abc")
	if code, _, stderr := run(t, "compare", ref, ref); code != 2 || !strings.Contains(stderr, `PHASE0_WORKERS: "abc" is not a base-10 integer`) {
		t.Errorf("compare with PHASE0_WORKERS=abc: exit %d, stderr %q", code, stderr)
	}
}

// `phase0 completion bash|zsh|fish` prints cobra's script, and the script's
// helper completes the setting flags.
func TestCompletion(t *testing.T) {
	for shell, marker := range map[string]string{"bash": "__start_phase0", "zsh": "#compdef phase0", "fish": "complete -c phase0"} {
		code, out, stderr := run(t, "completion", shell)
		if code != 0 || !strings.Contains(out, marker) {
			t.Errorf("completion %s: exit %d, %d bytes without %q; stderr %q", shell, code, len(out), marker, stderr)
		}
	}
	code, out, _ := run(t, "__complete", "run", "--reference-")
	if code != 0 || !strings.Contains(out, "--reference-steps") {
		t.Errorf("__complete run --reference-: exit %d:\n%s", code, out)
	}
	if code, _, _ := run(t, "completion", "tcsh"); code != 2 {
		t.Errorf("completion tcsh: exit %d, want 2", code)
	}
}
