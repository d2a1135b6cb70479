package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"phase0/gate/reference"
	"phase0/internal/sttest"
	"phase0/run/settings"
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
	if code, _, errb := run(t, "compare", ref); code != 2 || !strings.Contains(errb, "compare needs two folders, REFERENCE and CANDIDATE") {
		t.Errorf("one argument: exit %d, %s", code, errb)
	}
	if code, _, errb := run(t, "reference", ref, "--dtype", "float32"); code != 2 || !strings.Contains(errb, "give --out DIR") {
		t.Errorf("--dtype float32 without --out: exit %d, %s", code, errb)
	}
}

// issue 31 case 12: compare judged a reference.json with a repeated key, a
// byte that is not UTF-8, tensors_bytes -1 or n_layers 10^12 as PASS.
func TestCompareRefusesMalformedMetadata(t *testing.T) {
	for name, edit := range map[string]func(string) string{
		"repeated role": func(m string) string {
			return strings.Replace(m, `"role":"reference",`, `"role":"reference","role":"candidate",`, 1)
		},
		"not UTF-8":        func(m string) string { return strings.Replace(m, `"runner":"t"`, "\"runner\":\"t\xe9\"", 1) },
		"tensors_bytes -1": func(m string) string { return strings.Replace(m, `"tensors_bytes":0`, `"tensors_bytes":-1`, 1) },
		"n_layers 10^12": func(m string) string {
			return strings.Replace(m, `"tensors_bytes":0`, `"tensors_bytes":0,"n_layers":1000000000000`, 1)
		},
	} {
		ref := writeRecording(t, "tok", 3, []int64{3, 4, 5, 6, 7})
		path := filepath.Join(ref, reference.MetaFile)
		data, _ := os.ReadFile(path)
		edited := edit(string(data))
		if edited == string(data) {
			t.Fatalf("%s: the edit changed nothing in %s", name, data)
		}
		os.WriteFile(path, []byte(edited), 0o644)
		if code, out, _ := run(t, "compare", ref, ref); code != 2 || !strings.Contains(out, "could not compare") {
			t.Errorf("%s: exit %d, want 2:\n%s", name, code, out)
		}
	}
}

// compare's recordings and the reference_steps setting share one bound.
func TestReferenceStepsRangeIsTheFormats(t *testing.T) {
	row, _ := settings.Lookup("reference_steps")
	if row.Range.Max != strconv.Itoa(reference.MaxSteps) {
		t.Errorf("reference_steps goes up to %s, a recording up to %d", row.Range.Max, reference.MaxSteps)
	}
}

// issue 31 case 11: `reference` refuses what it cannot honour, before it
// reads the model or writes: no steps to record (it recorded 32), and a
// workspace name beside --out (it was ignored).
func TestReferenceRefusesWhatItCannotHonour(t *testing.T) {
	good := writeModel(t, tinyLlama)
	cfg := filepath.Join(t.TempDir(), "zero.yaml")
	os.WriteFile(cfg, []byte("reference_steps: 0\n"), 0o644)
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--reference-steps", "0"}, nil, `--reference-steps: reference_steps 0 records nothing`},
		{nil, map[string]string{"PHASE0_REFERENCE_STEPS": "0"}, `PHASE0_REFERENCE_STEPS: reference_steps 0 records nothing`},
		{[]string{"--config", cfg}, nil, cfg + `:1: reference_steps: reference_steps 0 records nothing`},
		{[]string{"--name", "foo"}, nil, `--name: name "foo" does not apply with --out`},
		{nil, map[string]string{"PHASE0_NAME": "foo"}, `PHASE0_NAME: name "foo" does not apply with --out`},
	} {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		out := filepath.Join(t.TempDir(), "D")
		code, stdout, _ := run(t, append([]string{"reference", good, "--out", out, "--json"}, tc.args...)...)
		var rep struct{ Status, Error string }
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != 2 || rep.Status != "ERROR" || !strings.Contains(rep.Error, tc.want) {
			t.Errorf("%v %v: exit %d, %v, error %q; want exit 2 saying %q", tc.args, tc.env, code, err, rep.Error, tc.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%v %v: --out %s was created", tc.args, tc.env, out)
		}
		for k := range tc.env {
			os.Unsetenv(k)
		}
	}
}
