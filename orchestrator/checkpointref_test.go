package orchestrator

import (
	"slices"
	"testing"
)

func TestWithoutLocalPaths(t *testing.T) {
	st := &state{facts: facts{model: &resolvedModel{Dir: "/data/it/Tiny-Base"}, workspace: &workspace{dir: "/repo/llms/tiny_base"}}}
	got := withoutLocalPaths([]string{
		"python weights: /data/it/Tiny-Base/model.safetensors: header length 99 does not fit",
		"hf baseline: /repo/llms/tiny_base/tiny_base_weights.py raised; runner /repo/llms/verify/runners/hf_runner.py",
		"plain finding",
	}, st)
	want := []string{
		"python weights: <checkpoint>/model.safetensors: header length 99 does not fit",
		"hf baseline: <workspace>/tiny_base_weights.py raised; runner <llms>/verify/runners/hf_runner.py",
		"plain finding",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
