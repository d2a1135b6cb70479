package report

import "testing"

func TestRunnerShown(t *testing.T) {
	if got := runnerShown("/repo/llms/verify/runners/hf_runner.py", "/repo/llms"); got != "verify/runners/hf_runner.py" {
		t.Errorf("upstream runner shown as %q", got)
	}
	if got := runnerShown("/opt/phase0/pyshim/phase0_shim/hf_runner.py", "/repo/llms"); got != "hf_runner.py" {
		t.Errorf("bundled runner shown as %q", got)
	}
}
