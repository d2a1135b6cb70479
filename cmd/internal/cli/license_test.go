package cli

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestLicenseHeaderLayers: the header of generated Python files comes from
// the default file (none), a --config file, PHASE0_LICENSE_HEADER and
// --license-header, in that order of increasing precedence; a line that
// cannot be a comment is a usage error naming where it came from.
func TestLicenseHeaderLayers(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "header.yaml")
	os.WriteFile(cfg, []byte("license_header: |\n  Copyright (C) 2026, Advanced Micro Devices, Inc.\n  SPDX-License-Identifier: MIT\n"), 0o644)
	for _, tc := range []struct {
		args []string
		env  string
		want []string
		err  string
	}{
		{nil, "", nil, ""},
		{[]string{"--config", cfg}, "", []string{"Copyright (C) 2026, Advanced Micro Devices, Inc.", "SPDX-License-Identifier: MIT"}, ""},
		{[]string{"--config", cfg}, "# SPDX-License-Identifier: Apache-2.0", []string{"SPDX-License-Identifier: Apache-2.0"}, ""},
		{[]string{"--config", cfg, "--license-header", "A\nB"}, "C", []string{"A", "B"}, ""},
		{nil, "bell\a", nil, `PHASE0_LICENSE_HEADER: license header line 1: "bell\a" contains`},
		{[]string{"--license-header", "tab\tline"}, "", nil, "--license-header: license header line 1"},
	} {
		if tc.env != "" {
			t.Setenv("PHASE0_LICENSE_HEADER", tc.env)
		} else {
			os.Unsetenv("PHASE0_LICENSE_HEADER")
		}
		var got []string
		root := &cobra.Command{Use: "phase0", SilenceUsage: true, SilenceErrors: true}
		root.PersistentFlags().String("config", "", "")
		c := &cobra.Command{Use: "run", RunE: func(cmd *cobra.Command, _ []string) error {
			s, _, err := layerSettings(cmd, io.Discard, nil)
			if err != nil {
				return err
			}
			got = s.LicenseHeader
			return nil
		}}
		c.Flags().String("license-header", "", "")
		root.AddCommand(c)
		root.SetArgs(append([]string{"run"}, tc.args...))
		err := root.Execute()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v env %q: error %v, want %q", tc.args, tc.env, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v env %q: %v", tc.args, tc.env, err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v env %q: license header %q, want %q", tc.args, tc.env, got, tc.want)
		}
	}
}

// The Python API's option reaches the same setting.
func TestLicenseHeaderOption(t *testing.T) {
	var out, errb strings.Builder
	code := Execute(t.Context(), []string{"run", "/no/such/model"}, &out, &errb, Options{Version: "test", Overrides: map[string]any{"license_header": "x\x00"}})
	if code != 2 || !strings.Contains(errb.String(), `option license_header: "x\x00" is not a string without a NUL character`) {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}
