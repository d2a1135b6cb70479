package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An unknown flag gets a "did you mean" from the suggester the PHASE0_*
// variables use, or the commands that take it; it is still exit 2.
func TestUnknownFlagSuggests(t *testing.T) {
	ref := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", ref, "--worker", "3"}, "unknown flag: --worker (did you mean --workers?)"},
		{[]string{"run", ref, "--fersh"}, "(did you mean --fresh?)"},
		{[]string{"inspect", ref, "--Scan"}, "(did you mean --scan?)"},
		{[]string{"baseline", ref, "--max-perplexity-ration=2"}, "(did you mean --max-perplexity-ratio?)"},
		{[]string{"inspect", ref, "--name", "x"}, "inspect does not take it (reference and run take it)"},
		{[]string{"inspect", ref, "--zzzzzz"}, "(phase0 inspect --help lists its flags)"},
	} {
		code, _, stderr := run(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 saying %q", tc.args, code, stderr, tc.want)
		}
	}
}

// A model command given no MODEL, a list where one model goes, or several
// says what MODEL is and which commands take lists (exit 2).
func TestModelArgumentMessages(t *testing.T) {
	list := filepath.Join(t.TempDir(), "models.txt")
	if err := os.WriteFile(list, []byte("default\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"inspect"}, "inspect needs a MODEL: a folder holding config.json, a hub id org/name[@revision], or default; or several, or @FILE"},
		{[]string{"run"}, "usage: phase0 run MODEL... | @FILE"},
		{[]string{"baseline"}, "baseline needs a MODEL: a folder holding config.json"},
		{[]string{"reference"}, "usage: phase0 reference MODEL [flags]"},
		{[]string{"baseline", "@" + list}, "baseline takes one MODEL, not a list"},
		{[]string{"reference", "@" + list}, "inspect and run take lists"},
		{[]string{"baseline", "a/b", "c/d"}, "baseline takes one MODEL, got 2 arguments"},
	} {
		code, _, stderr := run(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "cannot start") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 saying %q", tc.args, code, stderr, tc.want)
		}
	}
}

// compare's usage errors with --json print compare's own shape (reference,
// candidate, prompts, layers), never a model report's.
func TestCompareUsageErrorIsCompareShaped(t *testing.T) {
	ref := t.TempDir()
	for _, args := range [][]string{
		{"compare", "--json"},
		{"compare", ref, "--json"},
		{"compare", ref, ref, "--json", "--scna"},
	} {
		code, out, _ := run(t, args...)
		var obj map[string]any
		if err := json.Unmarshal([]byte(out), &obj); err != nil {
			t.Fatalf("%v: stdout is not one JSON object: %v\n%s", args, err, out)
		}
		_, hasPrompts := obj["prompts"]
		_, hasModelID := obj["model_id"]
		if code != 2 || obj["command"] != "compare" || obj["status"] != "ERROR" || !hasPrompts || hasModelID || obj["error"] == "" {
			t.Errorf("%v: exit %d, %v; want exit 2 and compare's ERROR object", args, code, obj)
		}
	}
}

// reports.md: a local folder's model_id is its absolute path as given (a
// link is not followed; model_dir is the resolved folder).
func TestModelIDOfAFolder(t *testing.T) {
	dir := writeModel(t, tinyLlama)
	link := filepath.Join(t.TempDir(), "ckpt")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	_, out, _ := run(t, "inspect", link, "--json")
	var rep struct {
		ModelID string `json:"model_id"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.ModelID != link {
		t.Errorf("model_id %q, want the folder's absolute path as given, %q", rep.ModelID, link)
	}
}
