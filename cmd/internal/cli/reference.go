package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"phase0/run/orchestrator"
)

// referenceFlags reads the flags only `reference` has that are not
// settings (settings.Table), --dtype and --out, and refuses the settings
// `reference` cannot honour: no steps to record, and a workspace name when
// --out already says where the recording goes.
func referenceFlags(cmd *cobra.Command, s *orchestrator.Settings, from origins) error {
	if cmd.Name() != "reference" {
		return nil
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
	if s.ReferenceSteps < 1 {
		return fmt.Errorf("%s: reference_steps %d records nothing; reference records at least 1 step per prompt (0 means \"no reference\" to run only)",
			from.of("reference_steps"), s.ReferenceSteps)
	}
	if s.ReferenceOut != "" && s.Name != "" {
		return fmt.Errorf("%s: name %q does not apply with --out %s: the recording goes to --out, no workspace is named; give one of them",
			from.of("name"), s.Name, s.ReferenceOut)
	}
	return nil
}
