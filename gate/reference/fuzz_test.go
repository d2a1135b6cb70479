package reference

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"phase0/internal/sttest"
)

// seedTensors is one prompt of one step with top-2, as a seed, with the
// tensors edit changes (nil: as recorded).
func seedTensors(f *testing.F, edit func([]sttest.WriteTensor) []sttest.WriteTensor) []byte {
	path := filepath.Join(f.TempDir(), TensorsFile)
	i64 := make([]byte, 8)
	ts := []sttest.WriteTensor{
		{Name: "prompt.0.tokens", DType: "I64", Shape: []int64{1}, Data: i64},
		{Name: "prompt.0.chosen", DType: "I64", Shape: []int64{1}, Data: i64},
		{Name: "prompt.0.topk_ids", DType: "I64", Shape: []int64{1, 2}, Data: make([]byte, 16)},
		{Name: "prompt.0.topk_logprobs", DType: "F32", Shape: []int64{1, 2}, Data: make([]byte, 8)},
		{Name: "prompt.0.nonfinite", DType: "I64", Shape: []int64{1}, Data: i64},
		{Name: "diagnosis.layer.0.ffn_out", DType: "F32", Shape: []int64{1, 2}, Data: make([]byte, 8)},
		{Name: "diagnosis.final_hidden_normed", DType: "F32", Shape: []int64{1, 2}, Data: make([]byte, 8)},
	}
	if edit != nil {
		ts = edit(ts)
	}
	if err := sttest.WriteFile(path, ts, nil); err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzRead feeds arbitrary tensor files (with a metadata file that names
// their digest, so the bytes reach the parser) and roles: Read must return an
// error or a recording whose every slice matches its metadata and whose
// values a recorder could have written, never panic.
func FuzzRead(f *testing.F) {
	f.Add([]byte{}, 1, 5, RoleReference)
	f.Add([]byte("\x10\x00\x00\x00\x00\x00\x00\x00{}              "), 1, 5, RoleReference)
	f.Add([]byte(`x`), 32, 5, RoleCandidate)
	f.Add(seedTensors(f, nil), 1, 2, RoleReference)
	f.Add(seedTensors(f, nil), 1, 2, "judge")
	// Each malformed value or name the reader refuses, as a seed to mutate.
	f.Add(seedTensors(f, func(ts []sttest.WriteTensor) []sttest.WriteTensor {
		ts[4].Data = i64s(-3) // nonfinite
		return ts
	}), 1, 2, RoleReference)
	f.Add(seedTensors(f, func(ts []sttest.WriteTensor) []sttest.WriteTensor {
		ts[3].Data = f32Bytes(float32(math.Inf(1)), -1) // logprobs, nonfinite 0
		return ts
	}), 1, 2, RoleCandidate)
	f.Add(seedTensors(f, func(ts []sttest.WriteTensor) []sttest.WriteTensor {
		ts[2].Data = i64s(0, -1) // topk_ids
		return ts
	}), 1, 2, RoleReference)
	f.Add(seedTensors(f, func(ts []sttest.WriteTensor) []sttest.WriteTensor {
		return append(ts, sttest.WriteTensor{Name: "diagnosis.layer.00.ffn_out", DType: "F32", Shape: []int64{1, 2}, Data: make([]byte, 8)})
	}), 1, 2, RoleReference)
	f.Fuzz(func(t *testing.T, data []byte, steps, k int, role string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, TensorsFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		meta, _ := json.Marshal(Meta{Format: Format, Role: role, Prompts: []string{"p"}, DecodeSteps: steps, TopK: k, TensorsSHA256: hex.EncodeToString(sum[:])})
		if err := os.WriteFile(filepath.Join(dir, MetaFile), meta, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Read(dir)
		if err != nil {
			return
		}
		if r.Meta.Role != RoleReference && r.Meta.Role != RoleCandidate {
			t.Fatalf("role %q read", r.Meta.Role)
		}
		for _, p := range r.Prompts {
			if len(p.Chosen) != steps || len(p.TopKIDs) != steps || len(p.Nonfinite) != steps {
				t.Fatalf("prompt with %d/%d/%d steps, meta says %d", len(p.Chosen), len(p.TopKIDs), len(p.Nonfinite), steps)
			}
			for s, row := range p.TopKIDs {
				if len(row) != k {
					t.Fatalf("top-k row of %d, meta says %d", len(row), k)
				}
				for j, id := range row {
					lp := float64(p.TopKLogprobs[s][j])
					if id < 0 || p.Nonfinite[s] < 0 || p.Nonfinite[s] == 0 && (math.IsNaN(lp) || math.IsInf(lp, 0) || lp > 0) {
						t.Fatalf("step %d: id %d, log-prob %v, nonfinite %d read", s, id, lp, p.Nonfinite[s])
					}
				}
			}
		}
		for _, pr := range r.Probes {
			if pr.Name != layerProbe && pr.Name != "final_hidden_normed" && pr.Name != "logits" {
				t.Fatalf("probe %s of layer %d read", pr.Name, pr.Layer)
			}
		}
	})
}
