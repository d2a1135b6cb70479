package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"phase0/compare"
	"phase0/orchestrator"
)

// compareCommand is `phase0 compare REFERENCE CANDIDATE [--json]`: no model,
// no Python; both folders are recordings (phase0 reference, or any runner
// through phase0_shim.reference).
func compareCommand(stdout io.Writer, ran *bool, code *int) *cobra.Command {
	return &cobra.Command{
		Use:   "compare REFERENCE CANDIDATE",
		Short: "Judge a candidate recording against the reference: upstream verify's top-5 lockstep gate, plus the per-layer cosine table",
		Long: "Judge a candidate recording against the reference: upstream verify's top-5 lockstep gate per prompt\n" +
			"(at the first divergence each side's token must be in the other's top-5), plus the per-layer cosine /\n" +
			"abs-error table of the canonical prompt (informational). Exit 0 pass, 1 a prompt failed, 2 not comparable.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			r := compare.Files(args[0], args[1])
			*ran, *code = true, r.ExitCode()
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				b, err := json.MarshalIndent(r, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(stdout, "%s\n", b)
				return err
			}
			_, err := io.WriteString(stdout, r.Text())
			return err
		},
	}
}

// referenceFlags reads the flags only `reference` and `run` have.
func referenceFlags(cmd *cobra.Command, s *orchestrator.Settings) error {
	if f := cmd.Flags().Lookup("refresh"); f != nil {
		s.Refresh, _ = cmd.Flags().GetBool("refresh")
	}
	if f := cmd.Flags().Lookup("out"); f != nil {
		s.ReferenceOut = f.Value.String()
	}
	if f := cmd.Flags().Lookup("dtype"); f != nil {
		switch d := strings.ToLower(f.Value.String()); d {
		case "bfloat16", "bf16":
			s.ReferenceDtype = "bfloat16"
		case "float32", "fp32":
			s.ReferenceDtype = "float32"
		default:
			return fmt.Errorf("--dtype must be bfloat16 or float32, got %q", d)
		}
		if s.ReferenceDtype != "bfloat16" && s.ReferenceOut == "" {
			return fmt.Errorf("--dtype %s records a candidate, not the reference: give --out DIR", s.ReferenceDtype)
		}
	}
	return nil
}
