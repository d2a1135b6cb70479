package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"phase0/run/orchestrator"
	"phase0/run/settings"

	"phase0/internal/boundedfile"
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
		if f.Changed && s.ReferenceOut == "" {
			// as --junit "" and --config "": not the same as leaving it out
			return errors.New("--out: an empty value: give a folder, or leave --out out")
		}
		if why := boundedfile.TooLong("the folder", s.ReferenceOut); why != "" {
			return fmt.Errorf("--out: %s", why)
		}
	}
	if f := cmd.Flags().Lookup("dtype"); f != nil {
		switch d := f.Value.String(); d {
		case "bfloat16", "float32":
			s.ReferenceDtype = d
		default:
			return fmt.Errorf("--dtype must be bfloat16 or float32 (lower case), got %s", settings.Quote(d))
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
