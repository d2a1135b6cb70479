package reference

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"phase0/internal/sttest"
	"phase0/internal/testenv"
)

func i64s(xs ...int64) []byte {
	b := make([]byte, 8*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

func f32Bytes(xs ...float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// validRecording is one prompt, 2 steps of top-2, n_layers 2, as the recorder
// writes it: the tensors and the metadata.
func validRecording() ([]sttest.WriteTensor, Meta) {
	ts := []sttest.WriteTensor{
		{Name: "prompt.0.tokens", DType: "I64", Shape: []int64{3}, Data: i64s(1, 5, 6)},
		{Name: "prompt.0.chosen", DType: "I64", Shape: []int64{2}, Data: i64s(7, 8)},
		{Name: "prompt.0.topk_ids", DType: "I64", Shape: []int64{2, 2}, Data: i64s(7, 0, 8, 1)},
		{Name: "prompt.0.topk_logprobs", DType: "F32", Shape: []int64{2, 2}, Data: f32Bytes(-0.1, -2.5, 0, -9)},
		{Name: "prompt.0.nonfinite", DType: "I64", Shape: []int64{2}, Data: i64s(0, 0)},
		{Name: "diagnosis.layer.0.ffn_out", DType: "F32", Shape: []int64{3, 2}, Data: f32Bytes(1, 2, 3, 4, 5, 6)},
		{Name: "diagnosis.final_hidden_normed", DType: "F32", Shape: []int64{3, 2}, Data: f32Bytes(1, 2, 3, 4, 5, 6)},
		{Name: "diagnosis.logits", DType: "F32", Shape: []int64{10}, Data: make([]byte, 40)},
	}
	m := Meta{Format: Format, Role: RoleReference, Runner: "test", Dtype: "bfloat16", TokenizerSHA256: "t",
		Prompts: []string{"The capital of France is"}, DecodeSteps: 2, TopK: 2, NLayers: 2}
	return ts, m
}

// writeDir writes a recording folder from the tensors and metadata given;
// the metadata names the digest of the tensors as written.
func writeDir(t *testing.T, ts []sttest.WriteTensor, m Meta) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, TensorsFile)
	if err := sttest.WriteFile(path, ts, map[string]string{"format": Format}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	m.TensorsSHA256, m.TensorsBytes = hex.EncodeToString(sum[:]), int64(len(data))
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, MetaFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReadRefusesWhatNoRecorderWrites: each row is one value or name the
// format does not allow, in real files; the error names the field or tensor,
// the value and what is allowed.
func TestReadRefusesWhatNoRecorderWrites(t *testing.T) {
	logprobs := func(xs ...float32) sttest.WriteTensor {
		return sttest.WriteTensor{Name: "prompt.0.topk_logprobs", DType: "F32", Shape: []int64{2, 2}, Data: f32Bytes(xs...)}
	}
	nonfinite := func(xs ...int64) sttest.WriteTensor {
		return sttest.WriteTensor{Name: "prompt.0.nonfinite", DType: "I64", Shape: []int64{2}, Data: i64s(xs...)}
	}
	ids := func(name string, shape []int64, xs ...int64) sttest.WriteTensor {
		return sttest.WriteTensor{Name: name, DType: "I64", Shape: shape, Data: i64s(xs...)}
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, tc := range []struct {
		name    string
		replace []sttest.WriteTensor // set by name
		add     []string             // extra F32 tensors
		keep    int                  // the first keep tensors only (0: all)
		meta    func(*Meta)
		want    string // "": reads
	}{
		{name: "as recorded"},
		{name: "a candidate", meta: func(m *Meta) { m.Role = RoleCandidate }},
		{name: "NaN log-probabilities of a step with non-finite logits", replace: []sttest.WriteTensor{nonfinite(0, 3), logprobs(-0.1, -2.5, nan, nan)}},
		{name: "a candidate without diagnosis tensors", keep: 5, meta: func(m *Meta) { m.Role, m.NLayers = RoleCandidate, 0 }},

		{name: "negative non-finite count", replace: []sttest.WriteTensor{nonfinite(0, -3)},
			want: "tensor prompt.0.nonfinite[1] is -3: a count of non-finite logits, want >= 0"},
		{name: "+Inf log-probability with nonfinite 0", replace: []sttest.WriteTensor{logprobs(-0.1, inf, 0, -9)},
			want: "tensor prompt.0.topk_logprobs[0][1] is +Inf while prompt.0.nonfinite[0] is 0: the log-probability of finite logits is finite and <= 0"},
		{name: "-Inf log-probability with nonfinite 0", replace: []sttest.WriteTensor{logprobs(-0.1, -1, -inf, -9)},
			want: "tensor prompt.0.topk_logprobs[1][0] is -Inf while prompt.0.nonfinite[1] is 0"},
		{name: "NaN log-probability with nonfinite 0", replace: []sttest.WriteTensor{logprobs(nan, -1, 0, -9)},
			want: "tensor prompt.0.topk_logprobs[0][0] is NaN while prompt.0.nonfinite[0] is 0"},
		{name: "positive log-probability", replace: []sttest.WriteTensor{logprobs(-0.1, -1, 0.5, -9)},
			want: "tensor prompt.0.topk_logprobs[1][0] is 0.5 while prompt.0.nonfinite[1] is 0"},
		{name: "negative top-k id", replace: []sttest.WriteTensor{ids("prompt.0.topk_ids", []int64{2, 2}, 7, 0, -8, 1)},
			want: "tensor prompt.0.topk_ids[1][0] is -8: a token id, want >= 0"},
		{name: "negative chosen id", replace: []sttest.WriteTensor{ids("prompt.0.chosen", []int64{2}, 7, -1)},
			want: "tensor prompt.0.chosen[1] is -1: a token id, want >= 0"},
		{name: "negative prompt token", replace: []sttest.WriteTensor{ids("prompt.0.tokens", []int64{3}, 1, math.MinInt64, 6)},
			want: "tensor prompt.0.tokens[1] is -9223372036854775808: a token id, want >= 0"},

		{name: "unknown tensor", add: []string{"model.embed_tokens.weight"},
			want: "tensor model.embed_tokens.weight is not part of the format: it defines prompt.<i>.{tokens,chosen,topk_ids,topk_logprobs,nonfinite} " +
				"(i < 1 prompts), diagnosis.layer.<l>.ffn_out (l < n_layers 2), diagnosis.final_hidden_normed and diagnosis.logits"},
		{name: "a prompt the metadata does not have", add: []string{"prompt.1.tokens"}, want: "tensor prompt.1.tokens is not part of the format"},
		{name: "an unknown prompt field", add: []string{"prompt.0.logits"}, want: "tensor prompt.0.logits is not part of the format"},
		{name: "another probe", add: []string{"diagnosis.layer.0.attn_out"}, want: "tensor diagnosis.layer.0.attn_out is not part of the format"},
		{name: "a layer index with a leading zero", add: []string{"diagnosis.layer.01.ffn_out"}, want: "tensor diagnosis.layer.01.ffn_out is not part of the format"},
		{name: "a signed layer index", add: []string{"diagnosis.layer.+1.ffn_out"}, want: "tensor diagnosis.layer.+1.ffn_out is not part of the format"},
		{name: "a layer past n_layers", add: []string{"diagnosis.layer.2.ffn_out"}, want: "tensor diagnosis.layer.2.ffn_out is not part of the format"},
		{name: "many unknown tensors", add: []string{"g", "f", "e", "d", "c", "b", "a"}, want: "tensors a, b, c, d, e and 2 more are not part of the format"},

		{name: "unknown role", meta: func(m *Meta) { m.Role = "judge" }, want: `role "judge", want "reference" or "candidate"`},
		{name: "no role", meta: func(m *Meta) { m.Role = "" }, want: `role "", want "reference" or "candidate"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, m := validRecording()
			if tc.keep > 0 {
				ts = ts[:tc.keep]
			}
			for _, w := range tc.replace {
				ts[slices.IndexFunc(ts, func(x sttest.WriteTensor) bool { return x.Name == w.Name })] = w
			}
			for _, name := range tc.add {
				ts = append(ts, sttest.WriteTensor{Name: name, DType: "F32", Shape: []int64{1, 2}, Data: make([]byte, 8)})
			}
			if tc.meta != nil {
				tc.meta(&m)
			}
			r, err := Read(writeDir(t, ts, m))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("a valid recording is refused: %v", err)
				}
				if len(r.Prompts) != 1 || len(r.Prompts[0].TopKIDs) != 2 {
					t.Fatalf("read %+v", r.Prompts)
				}
				return
			}
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v\nwant ErrFormat containing %q", err, tc.want)
			}
		})
	}
}

// TestReadLeavesOtherFilesAlone: files beside the two a recording consists
// of (a sources.json another tool adds) are not tensors and not refused.
func TestReadLeavesOtherFilesAlone(t *testing.T) {
	ts, m := validRecording()
	dir := writeDir(t, ts, m)
	for name, body := range map[string]string{"sources.json": `{"model": "x"}`, "notes.safetensors": "not even safetensors"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "extra"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err != nil {
		t.Fatalf("a recording with other files beside it: %v", err)
	}
}

// TestReadsWhatPythonRecords: phase0_shim.reference (the writer every
// recording goes through) writes a reference and a candidate that Go reads,
// with a step of non-finite logits and a sources.json beside them.
func TestReadsWhatPythonRecords(t *testing.T) {
	py := testenv.Python(t)
	dir := t.TempDir()
	const script = `
import sys
from pathlib import Path
import numpy as np
from phase0_shim import reference

class Out:
    def __init__(self, **kw): self.__dict__.update(kw)

class Runner:
    def _logits(self, token):
        z = np.zeros(16, dtype=np.float32)
        z[(token + 1) % 16] = 5.0
        return z
    def prefill(self, tokens):
        self.pos = len(tokens)
        z = self._logits(int(tokens[-1]))
        hidden = np.ones((len(tokens), 4), dtype=np.float32)
        return Out(layer_intermediates=[{"ffn_out": hidden}, {}], final_hidden_normed=hidden, logits_at_pred=z, top1_token=int(np.argmax(z)))
    def decode_step(self, token, pos):
        z = self._logits(token)
        if pos == self.pos + 1:
            z[3] = np.nan
        return Out(lm_head_logits=z, top1_token=int(np.nanargmax(z)))

out = Path(sys.argv[1])
r = Runner()
gens = [reference.generate(r, "a b", [1, 2], 4, 5), reference.generate(r, "c", [7], 4, 5)]
reference.write(out / "ref", gens, reference.diagnosis_tensors(r, [1, 2]),
                {"role": "reference", "runner": "numpy", "dtype": "float32", "tokenizer_sha256": "t", "n_layers": 2})
reference.record_candidate(Runner(), out / "ref", out / "cand", full_runner=Runner())
(out / "ref" / "sources.json").write_text('{"model": "numpy"}')
`
	cmd := exec.Command(py, "-c", script, dir)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+testenv.PyShim())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	for _, side := range []string{"ref", "cand"} {
		r, err := Read(filepath.Join(dir, side))
		if err != nil {
			t.Fatalf("%s: %v", side, err)
		}
		if len(r.Prompts) != 2 || r.Prompts[0].Nonfinite[2] != 1 || len(r.Probes) != 3 {
			t.Errorf("%s: prompts %+v, %d probes", side, r.Prompts, len(r.Probes))
		}
	}
}
