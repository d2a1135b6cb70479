package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"phase0/internal/atomicfile"
	"phase0/output/report"
	"phase0/output/report/junit"
	"phase0/read/modellist"
	"phase0/run/listrun"

	"phase0/internal/boundedfile"
)

// Flags of one invocation (not settings) on the commands that take a list:
// a JUnit XML file for CI, and one shard of the list for one CI job.
const (
	flagJUnit = "junit"
	flagShard = "shard"
)

func addFleetFlags(c *cobra.Command) {
	stringFlag(c.Flags(), flagJUnit, "", "also write the verdicts as JUnit XML to FILE (a testcase per model), for CI")
	stringFlag(c.Flags(), flagShard, "", "run only shard I of N of the list (I/N, e.g. 2/4): a model's shard is a hash of its line, so appending lines moves no model")
}

// fleet is what --junit and --shard asked for, and where the list's notes
// (a model listed twice) are said.
type fleet struct {
	junit string
	shard modellist.Shard
	notes io.Writer
}

// fleetFlags reads --junit and --shard; a JUnit file that cannot be written
// is refused before anything runs, as is the file the command's own stdout
// or stderr goes to (`--json > f --junit f`: the report printed would be
// replaced by the JUnit one).
func (inv *invocation) fleetFlags(cmd *cobra.Command) (fleet, error) {
	f := fleet{notes: inv.stderr}
	for _, name := range []string{flagJUnit, flagShard} {
		if v, _ := cmd.Flags().GetString(name); v == "" && cmd.Flags().Changed(name) {
			return f, fmt.Errorf("--%s: an empty value: give one, or leave --%s out", name, name)
		}
	}
	f.junit, _ = cmd.Flags().GetString(flagJUnit)
	if s, _ := cmd.Flags().GetString(flagShard); s != "" {
		sh, err := modellist.ParseShard(s)
		if err != nil {
			return f, fmt.Errorf("--shard: %w", err)
		}
		f.shard = sh
	}
	if f.junit != "" {
		if why := boundedfile.TooLong("the path", f.junit); why != "" {
			return f, fmt.Errorf("--junit: %s", why)
		}
		if err := notAnOutput(f.junit, map[string]io.Writer{"stdout": inv.stdout, "stderr": inv.stderr}); err != nil {
			return f, fmt.Errorf("--junit: %w", err)
		}
		if err := atomicfile.CheckWritable(f.junit); err != nil {
			return f, fmt.Errorf("--junit: %w", err)
		}
		if err := junit.CheckReplaceable(f.junit); err != nil {
			return f, fmt.Errorf("--junit: %w", err)
		}
	}
	return f, nil
}

// notAnOutput refuses path when it is the file one of outs (the command's
// stdout and stderr, when they are files) writes to.
func notAnOutput(path string, outs map[string]io.Writer) error {
	st, err := os.Stat(path)
	if err != nil {
		return nil // missing: no stream writes to it; CheckWritable says the rest
	}
	for _, name := range []string{"stdout", "stderr"} {
		f, ok := outs[name].(*os.File)
		if !ok {
			continue
		}
		if fst, err := f.Stat(); err == nil && os.SameFile(st, fst) {
			return fmt.Errorf("%s is the file phase0's %s goes to (a shell redirect?): the JUnit report would replace what is printed there; name another file", path, name)
		}
	}
	return nil
}

// entries are the models of args in this shard.
func (f fleet) entries(args []string) ([]modellist.Entry, error) {
	entries, notes, err := modellist.ExpandNoting(args)
	if err != nil {
		return nil, err
	}
	for _, n := range notes {
		fmt.Fprintf(f.notes, "phase0: %s\n", n)
	}
	return f.shard.Select(entries), nil
}

// writeJUnit writes the cases as the command's JUnit report, when asked.
func (f fleet) writeJUnit(command, version string, started time.Time, seconds float64, cases []junit.Case) error {
	if f.junit == "" {
		return nil
	}
	host, _ := os.Hostname()
	return junit.WriteFile(f.junit, junit.Suite{Command: command, Version: version, Shard: f.shard.String(),
		Hostname: host, Started: started, Seconds: seconds, Cases: cases})
}

func batchCases(b *listrun.Batch) []junit.Case {
	var out []junit.Case
	for _, m := range b.Models {
		out = append(out, junit.Case{Report: m.Report, ListedAt: m.ListedAt})
	}
	return out
}

func triageCases(t *listrun.Triage) []junit.Case {
	var out []junit.Case
	for _, m := range t.Models {
		out = append(out, junit.Case{Report: m.Report, ListedAt: m.Source})
	}
	return out
}

func singleCase(r *report.Report) []junit.Case { return []junit.Case{{Report: r}} }

// single is one model's outcome, its JUnit file (with --junit) written
// after the report.
func (f fleet) single(command, version string, started time.Time, rep *report.Report) *outcome {
	out := reportOutcome(rep)
	out.after = func() error { return f.writeJUnit(command, version, started, rep.Seconds, singleCase(rep)) }
	return out
}
