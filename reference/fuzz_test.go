package reference

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"phase0/internal/sttest"
)

// validTensors is one prompt of one step with top-2, as a seed.
func validTensors(f *testing.F) []byte {
	path := filepath.Join(f.TempDir(), TensorsFile)
	i64 := make([]byte, 8)
	err := sttest.WriteFile(path, []sttest.WriteTensor{
		{Name: "prompt.0.tokens", DType: "I64", Shape: []int64{1}, Data: i64},
		{Name: "prompt.0.chosen", DType: "I64", Shape: []int64{1}, Data: i64},
		{Name: "prompt.0.topk_ids", DType: "I64", Shape: []int64{1, 2}, Data: make([]byte, 16)},
		{Name: "prompt.0.topk_logprobs", DType: "F32", Shape: []int64{1, 2}, Data: make([]byte, 8)},
		{Name: "prompt.0.nonfinite", DType: "I64", Shape: []int64{1}, Data: i64},
		{Name: "diagnosis.layer.0.ffn_out", DType: "F32", Shape: []int64{1, 2}, Data: make([]byte, 8)},
		{Name: "diagnosis.final_hidden_normed", DType: "F32", Shape: []int64{1, 2}, Data: make([]byte, 8)},
	}, nil)
	if err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzRead feeds arbitrary tensor files (with a metadata file that names
// their digest, so the bytes reach the parser): Read must return an error or
// a recording whose every slice matches its metadata, never panic.
func FuzzRead(f *testing.F) {
	f.Add([]byte{}, 1, 5)
	f.Add([]byte("\x10\x00\x00\x00\x00\x00\x00\x00{}              "), 1, 5)
	f.Add([]byte(`x`), 32, 5)
	f.Add(validTensors(f), 1, 2)
	f.Fuzz(func(t *testing.T, data []byte, steps, k int) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, TensorsFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		meta, _ := json.Marshal(Meta{Format: Format, Prompts: []string{"p"}, DecodeSteps: steps, TopK: k, TensorsSHA256: hex.EncodeToString(sum[:])})
		if err := os.WriteFile(filepath.Join(dir, MetaFile), meta, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Read(dir)
		if err != nil {
			return
		}
		for _, p := range r.Prompts {
			if len(p.Chosen) != steps || len(p.TopKIDs) != steps || len(p.Nonfinite) != steps {
				t.Fatalf("prompt with %d/%d/%d steps, meta says %d", len(p.Chosen), len(p.TopKIDs), len(p.Nonfinite), steps)
			}
			for _, row := range p.TopKIDs {
				if len(row) != k {
					t.Fatalf("top-k row of %d, meta says %d", len(row), k)
				}
			}
		}
	})
}
