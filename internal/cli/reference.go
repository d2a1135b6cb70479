package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"phase0/orchestrator"
)

// referenceFlags reads the flags only `reference` has that are not
// settings (configs.Table): --dtype and --out.
func referenceFlags(cmd *cobra.Command, s *orchestrator.Settings) error {
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
