package orchestrator

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/internal/sttest"
	"phase0/output/report"
	"phase0/read/model"
	"phase0/read/safetensors"
)

// A checkpoint whose attention output projection has a bias is rejected with
// the reason code before gate 1 compares tensors, and nothing is generated:
// no "unexpected tensor" or "missing tensor" finding stands in for the reason.
func TestOutputBiasCheckpointIsRejectedUpFront(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(tiny(t, "llama-llama3"))); err != nil {
		t.Fatal(err)
	}
	// The same checkpoint plus o_proj biases (64 = hidden_size); the config
	// still says attention_bias false, as a hand-edited export might.
	path := filepath.Join(dir, "model.safetensors")
	data := mustRead(t, path)
	h, err := safetensors.ReadHeader(bytes.NewReader(data), int64(len(data)), "model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	var tensors []sttest.WriteTensor
	for _, x := range h.Tensors {
		tensors = append(tensors, sttest.WriteTensor{Name: x.Name, DType: x.DType, Shape: x.Shape, Data: data[x.Begin:x.End]})
	}
	for _, n := range []string{"model.layers.0.self_attn.o_proj.bias", "model.layers.1.self_attn.o_proj.bias"} {
		tensors = append(tensors, sttest.WriteTensor{Name: n, DType: "BF16", Shape: []int64{64}, Data: make([]byte, 128)})
	}
	if err := sttest.WriteFile(path, tensors, h.Metadata); err != nil {
		t.Fatal(err)
	}
	llms := t.TempDir()
	for name, r := range map[string]*report.Report{
		"inspect": Inspect(context.Background(), settingsFor(t, llms), dir, "test"),
		"run":     RunBF16(context.Background(), settingsFor(t, llms), dir, "test"),
	} {
		if r.Status != verdict.Rejected || ExitCode(r) != 1 || len(r.Rejections) != 1 || r.Rejections[0].Code != model.CodeOutputBias {
			t.Fatalf("%s: status %s, rejections %+v", name, r.Status, r.Rejections)
		}
		if !strings.Contains(r.Rejections[0].Message, "2 o_proj.bias tensor(s)") {
			t.Errorf("%s: message %q", name, r.Rejections[0].Message)
		}
		if w := r.Gates.Weights; w != nil && len(w.AllFindings()) > 0 {
			t.Errorf("%s: gate 1 ran after the rejection: %q", name, w.AllFindings())
		}
	}
	if entries, _ := os.ReadDir(llms); len(entries) != 0 {
		t.Errorf("a rejected model created %d entries in the llms folder", len(entries))
	}
}
