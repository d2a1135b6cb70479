// Package cli is the phase0 command line: flags, PHASE0_* env and YAML
// settings (declared once, in settings.Table) parsed strictly into
// orchestrator.Settings, the commands, and the report printing. cmd/phase0
// runs it with the process's arguments; the Python extension (pyext) runs it
// with a caller's options.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"phase0/gate/compare"
	"phase0/run/errkind"
	"phase0/run/orchestrator"

	"phase0/internal/boundedfile"
	"phase0/python/warm"
)

// exitUsage is returned for bad flags, a bad --config file or a bad setting.
const exitUsage = 2

// Options are what the program embedding the command line supplies.
type Options struct {
	// Version is the tool version printed by --version and in reports.
	Version string
	// Overrides set settings by their YAML key ("max_seq",
	// "cpu_helpers.attention_fallback") above every other layer: the Python
	// API's keyword options. Unknown keys are a usage error.
	Overrides map[string]any
	// Sessions, when set, lends the runs warm Python sessions: the Python
	// API keeps one lender for its process, so a second call does not
	// start torch again. nil: each run (or list) starts its own.
	Sessions *warm.Sessions
}

// Execute runs one invocation and returns its exit code. ctx ends the run
// (the caller turns SIGINT or a Python KeyboardInterrupt into a cancel).
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer, o Options) int {
	if args == nil {
		args = []string{} // cobra reads os.Args for nil
	}
	inv := &invocation{stdout: stdout, stderr: stderr, version: o.Version, overrides: o.Overrides, sessions: o.Sessions}
	root := newRoot(inv)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	var done *exit
	switch {
	case errors.As(err, &done) && done.err == nil:
		return done.code
	case errors.As(err, &done): // the command ran; printing its report failed
		fmt.Fprintf(stderr, "phase0: %s\n", boundedfile.Message(done.err.Error()))
		return exitUsage
	case err != nil: // the invocation: flags, settings, arguments
		if wantsJSON(args) {
			_ = inv.print(usageReport(args, o.Version, err), true)
		}
		fmt.Fprintf(stderr, "phase0: %s\n", boundedfile.Message(err.Error()))
		return exitUsage
	}
	return 0 // --help, --version
}

// invocation is what the commands of one Execute share: where to print, the
// version and the Python API's overrides (read only), and where each
// setting came from (origins), which the one command that runs fills.
type invocation struct {
	stdout, stderr io.Writer
	version        string
	overrides      map[string]any
	sessions       *warm.Sessions
	origins        origins
}

// outcome is what a command produced: its exit code and the report it
// prints, as text or as one JSON object (--json).
type outcome struct {
	code   int
	report interface{ Text() string }
	// after runs once the report is printed (the --junit file); its error
	// exits 2.
	after func() error
}

// exit carries a command's exit code out of cobra: every command that ran
// returns one from RunE (err: printing its report failed), so an error that
// is not an *exit is about the invocation.
type exit struct {
	code int
	err  error
}

func (e *exit) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return fmt.Sprintf("exit status %d", e.code)
}

func (e *exit) Unwrap() error { return e.err }

// runner is a command's body: the outcome to print, or an error about the
// invocation (nothing ran).
type runner func(ctx context.Context, cmd *cobra.Command, args []string) (*outcome, error)

// runE adapts a runner to cobra: it cancels the command's context when the
// body returns and prints the outcome, text or --json.
func (inv *invocation) runE(run runner) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx, stop := context.WithCancel(cmd.Context())
		defer stop()
		out, err := run(ctx, cmd, args)
		if err != nil {
			return err
		}
		asJSON, _ := cmd.Flags().GetBool("json")
		if err := inv.print(out.report, asJSON); err != nil {
			return &exit{code: out.code, err: err}
		}
		if out.after != nil {
			if err := out.after(); err != nil {
				return &exit{code: out.code, err: err}
			}
		}
		return &exit{code: out.code}
	}
}

func (inv *invocation) print(report interface{ Text() string }, asJSON bool) error {
	if !asJSON {
		_, err := io.WriteString(inv.stdout, report.Text())
		return err
	}
	b, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the report: %w", err)
	}
	_, err = fmt.Fprintf(inv.stdout, "%s\n", b)
	return err
}

// newRoot is the phase0 command with every subcommand.
func newRoot(inv *invocation) *cobra.Command {
	root := &cobra.Command{
		Use:           "phase0",
		Short:         "Phase 0 of bringing a HuggingFace decoder-only LLM up on AMD NPU2 (mlir-air)",
		Long:          "phase0 reads a model's config and weights natively, refuses what the NPU pipeline cannot run,\nwrites <name>_weights.py and <name>_cpu_helpers.py, confirms the HF transformers bf16 reference\nthrough verify/HfRunner, and records the result.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       inv.version,
	}
	root.SetFlagErrorFunc(flagError)
	boolFlag(root.PersistentFlags(), "json", "print exactly one JSON report object on stdout")
	addSettingFlags(root.PersistentFlags(), root.Name())
	root.AddCommand(
		newPreflightCmd(inv),
		newInspectCmd(inv),
		newBaselineCmd(inv),
		newRunCmd(inv),
		newReferenceCmd(inv),
		newCompareCmd(inv),
	)
	// cobra's `completion bash|zsh|fish|powershell`, made here rather than
	// when it runs so that an unknown shell is an error (exit 2) instead of
	// the help text of a command that cannot run.
	root.SetOut(inv.stdout) // the completion command keeps the writer it is made with
	root.SetErr(inv.stderr)
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		}
	}
	return root
}

// wantsJSON finds --json in arguments that may not have parsed, so a usage
// error still prints its one JSON object.
func wantsJSON(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" || a == "--json=true" {
			return true
		}
	}
	return false
}

// usageReport is the one JSON object of an invocation that failed to
// parse, in its command's shape: compare's own, a model report for the rest.
func usageReport(args []string, version string, err error) interface{ Text() string } {
	cmdName, modelArg := commandAndModel(args)
	msg := boundedfile.Message(err.Error())
	if cmdName == "compare" {
		pos := positional(args)
		ref, cand := "", ""
		if len(pos) > 1 {
			ref = pos[1]
		}
		if len(pos) > 2 {
			cand = pos[2]
		}
		return compare.Unrun(boundedfile.Cut(ref), boundedfile.Cut(cand), errors.New(msg))
	}
	return orchestrator.ErrorReport(boundedfile.Cut(cmdName), boundedfile.Cut(modelArg), version, errkind.Usage(msg, err))
}

// positional is the arguments that are not flags, the command first.
func positional(args []string) []string {
	var out []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}

// commandAndModel guesses the command and model from raw arguments, for the
// report of an invocation that failed to parse.
func commandAndModel(args []string) (cmd, model string) {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if cmd == "" {
			cmd = a
		} else if model == "" {
			model = a
		}
	}
	return cmd, model
}
