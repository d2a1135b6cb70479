package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMakePhase0PassesEachSettingAsOneArgument: `make phase0` hands MODEL,
// LLMS_DIR and NAME to phase0 as one argument each, whatever they hold
// (spaces, quotes, shell syntax; a `$` is make's, as in any make variable),
// and a leading ~/ (which zsh leaves as is in MODEL=~/x) as $HOME. The
// recipe make prints is run by bash with the binary swapped for one that
// prints its arguments.
func TestMakePhase0PassesEachSettingAsOneArgument(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	echo := filepath.Join(t.TempDir(), "args")
	if err := os.WriteFile(echo, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	home := os.Getenv("HOME")
	for _, tc := range []struct {
		vars []string
		want []string
	}{
		{nil, []string{"run", "default"}},
		{[]string{"MODEL=/models/My Models/smol  2"}, []string{"run", "/models/My Models/smol  2"}},
		{[]string{"MODEL=~/models/smol", "LLMS_DIR=~/mlir-air/programming_examples/llms"},
			[]string{"run", home + "/models/smol", "--llms-dir", home + "/mlir-air/programming_examples/llms"}},
		{[]string{"MODEL=@hf_models.txt", "NAME=it's `touch pwned` \"q\"; x"}, []string{"run", "@hf_models.txt", "--name", "it's `touch pwned` \"q\"; x"}},
	} {
		args := append([]string{"-n", "--no-print-directory", "-C", repoRoot, "phase0", "BIN=" + echo[1:]}, tc.vars...)
		out, err := exec.Command("make", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("make %v: %v\n%s", args, err, out)
		}
		var recipe string
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, echo) {
				recipe = line
			}
		}
		if recipe == "" {
			t.Fatalf("make %v printed no line running %s:\n%s", tc.vars, echo, out)
		}
		cmd := exec.Command("bash", "-c", strings.Replace(recipe, "./"+echo[1:], echo, 1))
		cmd.Dir = t.TempDir()
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", recipe, err)
		}
		if args := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n"); !slices.Equal(args, tc.want) {
			t.Errorf("make phase0 %q ran phase0 with %q, want %q", tc.vars, args, tc.want)
		}
		if _, err := os.Stat(filepath.Join(cmd.Dir, "pwned")); err == nil {
			t.Errorf("make phase0 %q ran a command substitution from a setting", tc.vars)
		}
	}
}
