package record

import (
	"slices"
	"testing"
)

func TestWithoutLocalPaths(t *testing.T) {
	got := WithoutLocalPaths([]string{
		"python weights: /data/it/Tiny-Base/model.safetensors: header length 99 does not fit",
		"hf baseline: /repo/llms/tiny_base/tiny_base_weights.py raised; runner /repo/llms/verify/runners/hf_runner.py",
		"plain finding",
	}, "/data/it/Tiny-Base", "/repo/llms/tiny_base")
	want := []string{
		"python weights: <checkpoint>/model.safetensors: header length 99 does not fit",
		"hf baseline: <workspace>/tiny_base_weights.py raised; runner <llms>/verify/runners/hf_runner.py",
		"plain finding",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
