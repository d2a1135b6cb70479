package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"phase0/internal/testenv"
)

// TestRecordingProgressOnStderrOnly: recording the reference prints its
// prompt/step progress on stderr, in order, with an ETA, and a final line;
// --json's stdout stays the one JSON object. The interval is 0 so that a
// tiny model's fast recording prints every step (2 s by default).
func TestRecordingProgressOnStderrOnly(t *testing.T) {
	t.Setenv("PHASE0_PROGRESS_INTERVAL", "0")
	t.Setenv("PHASE0_PYSHIM", testenv.PyShim())
	model := filepath.Join(testenv.TinyModels(t), "qwen3")
	out := filepath.Join(t.TempDir(), "reference")
	code, stdout, stderr := run(t, "reference", model, "--out", out, "--reference-steps", "4", "--python", testenv.Python(t), "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	var report struct {
		Status    string `json:"status"`
		Reference struct {
			Prompts int `json:"prompts"`
			Steps   int `json:"steps"`
		} `json:"reference"`
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&report); err != nil || dec.More() {
		t.Fatalf("stdout is not one JSON object (%v):\n%s", err, stdout)
	}
	if strings.Contains(stdout, "phase0: reference:") {
		t.Errorf("progress reached stdout:\n%s", stdout)
	}
	n, steps := report.Reference.Prompts, report.Reference.Steps
	if report.Status != "PASS" || n < 2 || steps != 4 {
		t.Fatalf("status %s, %d prompts × %d steps", report.Status, n, steps)
	}

	step := regexp.MustCompile(`^phase0: reference: prompt (\d+)/(\d+), step (\d+)/(\d+) \((\d+ s|\d+m\d\ds)(, ETA (\d+ s|\d+m\d\ds))?\)$`)
	var got []string
	final := ""
	for _, line := range strings.Split(stderr, "\n") {
		if m := step.FindStringSubmatch(line); m != nil {
			got = append(got, m[1]+"/"+m[2]+" "+m[3]+"/"+m[4])
			if m[6] == "" && len(got) < n*steps {
				t.Errorf("no ETA before the last step: %q", line)
			}
		} else if strings.HasPrefix(line, "phase0: reference: ") && strings.Contains(line, "decoded in ") {
			final = line
		}
	}
	var want []string
	for i := 1; i <= n; i++ {
		for j := 1; j <= steps; j++ {
			want = append(want, fmt.Sprintf("%d/%d %d/%d", i, n, j, steps))
		}
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("progress lines (prompt i/n step j/steps):\n got %v\nwant %v\nstderr:\n%s", got, want, stderr)
	}
	if wantFinal := fmt.Sprintf("phase0: reference: %d prompts × %d steps decoded in ", n, steps); !strings.HasPrefix(final, wantFinal) {
		t.Errorf("final line %q, want %q…", final, wantFinal)
	}
}
