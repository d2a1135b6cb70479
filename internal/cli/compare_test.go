package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/internal/sttest"
	"phase0/reference"
)

// writeRecording writes a one-prompt, one-step recording whose step chose `chosen`.
func writeRecording(t *testing.T, tokenizer string, chosen int64, topk []int64) string {
	t.Helper()
	dir := t.TempDir()
	le := func(xs ...int64) []byte {
		b := make([]byte, 8*len(xs))
		for i, x := range xs {
			for j := range 8 {
				b[8*i+j] = byte(uint64(x) >> (8 * j))
			}
		}
		return b
	}
	ts := []sttest.WriteTensor{
		{Name: "prompt.0.tokens", DType: "I64", Shape: []int64{2}, Data: le(1, 2)},
		{Name: "prompt.0.chosen", DType: "I64", Shape: []int64{1}, Data: le(chosen)},
		{Name: "prompt.0.topk_ids", DType: "I64", Shape: []int64{1, 5}, Data: le(topk...)},
		{Name: "prompt.0.topk_logprobs", DType: "F32", Shape: []int64{1, 5}, Data: make([]byte, 20)},
		{Name: "prompt.0.nonfinite", DType: "I64", Shape: []int64{1}, Data: le(0)},
	}
	path := filepath.Join(dir, reference.TensorsFile)
	if err := sttest.WriteFile(path, ts, nil); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	sum := sha256.Sum256(data)
	meta, _ := json.Marshal(reference.Meta{Format: reference.Format, Role: reference.RoleReference, Runner: "t", Dtype: "bfloat16", TokenizerSHA256: tokenizer,
		Prompts: []string{"p"}, DecodeSteps: 1, TopK: 5, TensorsSHA256: hex.EncodeToString(sum[:])})
	os.WriteFile(filepath.Join(dir, reference.MetaFile), meta, 0o644)
	return dir
}

func TestCompareCommandExitCodes(t *testing.T) {
	ref := writeRecording(t, "tok", 3, []int64{3, 4, 5, 6, 7})
	inside := writeRecording(t, "tok", 4, []int64{4, 3, 5, 6, 7})
	outside := writeRecording(t, "tok", 9, []int64{9, 10, 11, 12, 13})
	otherTok := writeRecording(t, "other", 3, []int64{3, 4, 5, 6, 7})
	for _, tc := range []struct {
		cand string
		code int
		want string
	}{
		{ref, 0, "phase0 compare: PASS"},
		{inside, 0, "diverges at step 0"},
		{outside, 1, "phase0 compare: FAIL"},
		{otherTok, 2, "tokenizer checksum"},
		{t.TempDir(), 2, "could not compare"},
	} {
		code, out, _ := run(t, "compare", ref, tc.cand)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("compare %s: exit %d, want %d; output:\n%s", tc.cand, code, tc.code, out)
		}
	}
	code, out, _ := run(t, "compare", ref, outside, "--json")
	var res struct {
		Status  string            `json:"status"`
		Prompts []json.RawMessage `json:"prompts"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 1 || res.Status != "FAIL" || len(res.Prompts) != 1 {
		t.Errorf("--json: exit %d, %v, %+v\n%s", code, err, res, out)
	}
	if code, _, errb := run(t, "compare", ref); code != 2 || !strings.Contains(errb, "accepts 2 arg") {
		t.Errorf("one argument: exit %d, %s", code, errb)
	}
	if code, _, errb := run(t, "reference", ref, "--dtype", "float32"); code != 2 || !strings.Contains(errb, "give --out DIR") {
		t.Errorf("--dtype float32 without --out: exit %d, %s", code, errb)
	}
}
