package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"phase0/internal/sttest"
	"phase0/read/model"
)

// writeModel writes a tiny Llama checkpoint (config + real safetensors) into a temp dir.
func writeModel(t *testing.T, configJSON string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(configJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := model.ParseRaw([]byte(configJSON))
	if err != nil {
		t.Fatal(err)
	}
	a := model.Analyze(raw)
	if a.Config == nil {
		return dir
	}
	var ts []sttest.WriteTensor
	for _, s := range model.ExpectedTensors(a.Config) {
		n := int64(2)
		for _, d := range s.Shape {
			n *= d
		}
		ts = append(ts, sttest.WriteTensor{Name: s.Name, DType: "BF16", Shape: s.Shape, Data: make([]byte, n)})
	}
	if err := sttest.WriteFile(filepath.Join(dir, "model.safetensors"), ts, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

const tinyLlama = `{"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
 "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 512, "rms_norm_eps": 1e-5, "torch_dtype": "bfloat16"}`

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Execute(context.Background(), args, &out, &errb, Options{Version: "test"})
	return code, out.String(), errb.String()
}

func TestInspectExitCodesAndJSON(t *testing.T) {
	good := writeModel(t, tinyLlama)
	moe := writeModel(t, strings.Replace(tinyLlama, `"vocab_size"`, `"num_local_experts": 8, "vocab_size"`, 1))
	noWeights := t.TempDir()
	os.WriteFile(filepath.Join(noWeights, "config.json"), []byte(tinyLlama), 0o644)
	os.WriteFile(filepath.Join(noWeights, "pytorch_model.bin"), []byte("not opened"), 0o644)
	badJSON := t.TempDir()
	os.WriteFile(filepath.Join(badJSON, "config.json"), []byte(`{"architectures": [`), 0o644)

	tests := []struct {
		name   string
		args   []string
		code   int
		status string
		text   string
		kind   string // error_kind; "" = no such key
	}{
		{"pass", []string{"inspect", good, "--json", "--scan"}, 0, "PASS", "", ""},
		{"rejected", []string{"inspect", moe, "--json"}, 1, "REJECTED", "num_local_experts is 8", ""},
		{"pickle only", []string{"inspect", noWeights, "--json"}, 1, "FAIL", "pytorch_model.bin", ""},
		{"bad config json", []string{"inspect", badJSON, "--json"}, 2, "ERROR", "not valid JSON", "config_unreadable"},
		{"no such folder", []string{"inspect", "/no/such/model", "--json"}, 2, "ERROR", "no such folder", "model_not_found"},
		{"bad option", []string{"inspect", good, "--json", "--workers", "-1"}, 2, "ERROR", "--workers", "usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			dec := json.NewDecoder(strings.NewReader(stdout))
			var rep map[string]any
			if err := dec.Decode(&rep); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
			}
			if dec.More() {
				t.Errorf("stdout holds more than one JSON value")
			}
			if rep["status"] != tt.status {
				t.Errorf("status %v, want %s", rep["status"], tt.status)
			}
			if !strings.Contains(stdout, tt.text) {
				t.Errorf("report lacks %q:\n%s", tt.text, stdout)
			}
			if kind, ok := rep["error_kind"]; tt.kind == "" && ok || tt.kind != "" && kind != tt.kind {
				t.Errorf("error_kind %v (present: %v), want %q", kind, ok, tt.kind)
			}
			for _, key := range []string{"model", "model_dir", "interrupted", "architecture", "family", "config", "defaulted", "rejections", "gates", "warnings"} {
				if _, ok := rep[key]; !ok {
					t.Errorf("report lacks key %s", key)
				}
			}
		})
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	good := writeModel(t, tinyLlama)
	badYAML := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(badYAML, []byte("timeout: [1, 2\n"), 0o644)
	unknown := filepath.Join(t.TempDir(), "unknown.yaml")
	os.WriteFile(unknown, []byte("timout: 5m\n"), 0o644)
	for _, args := range [][]string{
		{"inspect"},
		{"inspect", good, "--no-such-flag"},
		{"frobnicate"},
		{"inspect", good, "--config", badYAML},
		{"inspect", good, "--config", unknown},
		{"baseline", good, "--prompt-style", "chatty"},
	} {
		code, _, stderr := run(t, args...)
		if code != 2 || !strings.HasPrefix(stderr, "phase0: ") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// One rule for the flags of one invocation (issue 36): every flag phase0
// defines is given at most once — --config, --junit, --shard, --json,
// reference's --out and --dtype and every setting's flag — and an empty
// --config, --out or --junit is refused rather than taken as "not given".
func TestRepeatedFlags(t *testing.T) {
	good := writeModel(t, tinyLlama)
	dir := t.TempDir()
	bad, fine := filepath.Join(dir, "bad.yaml"), filepath.Join(dir, "fine.yaml")
	os.WriteFile(bad, []byte("workers: x\n"), 0o644)
	os.WriteFile(fine, []byte("workers: 3\n"), 0o644)
	j1, j2 := filepath.Join(dir, "a.xml"), filepath.Join(dir, "b.xml")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"inspect", good, "--config", bad, "--config", fine}, "--config: given twice"},
		{[]string{"inspect", good, "--config", fine, "--config", fine}, "--config: given twice"},
		{[]string{"inspect", good, "--config", ""}, "--config: an empty path"},
		{[]string{"inspect", good, "--workers", "x", "--workers", "3"}, `--workers: given twice ("x", then "3")`},
		{[]string{"inspect", good, "--workers", "3", "--workers", "4"}, `--workers: given twice ("3", then "4")`},
		{[]string{"inspect", good, "--scan", "--scan=false"}, `--scan: given twice ("true", then "false")`},
		{[]string{"inspect", good, "--workers", "-0"}, `--workers: "-0" is not a base-10 integer`},
		{[]string{"inspect", good, "--junit", j1, "--junit", j2}, "--junit: given twice"},
		{[]string{"inspect", good, "--shard", "1/2", "--shard", "2/2"}, `--shard: given twice ("1/2", then "2/2")`},
		{[]string{"run", good, "--shard", "1/2", "--shard", "1/2"}, "--shard: given twice"},
		{[]string{"inspect", good, "--json", "--json"}, "--json: given twice"},
		{[]string{"reference", good, "--out", dir, "--out", dir}, "--out: given twice"},
		{[]string{"reference", good, "--dtype", "float32", "--dtype", "bfloat16"}, "--dtype: given twice"},
		{[]string{"reference", good, "--out", ""}, "--out: an empty value"},
		{[]string{"reference", good, "--out=", "--dtype", "float32"}, "--out: an empty value"},
		{[]string{"reference", good, "--dtype", "BFLOAT16"}, `--dtype must be bfloat16 or float32 (lower case), got "BFLOAT16"`},
		{[]string{"reference", good, "--dtype", "bf16"}, `got "bf16"`},
		{[]string{"inspect", good, "--json=maybe"}, `--json takes true or false, not "maybe"`},
	} {
		code, stdout, stderr := run(t, tc.args...)
		asJSON := slices.Contains(tc.args, "--json") // a usage error's one JSON object
		if code != 2 || (stdout != "") != asJSON || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "strconv") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 saying %q", tc.args, code, stderr, tc.want)
		}
	}
	code, stdout, stderr := run(t, "inspect", good, "--workers", "4", "--config", fine, "--json=true")
	var r struct{ Status string }
	if err := json.Unmarshal([]byte(stdout), &r); code != 0 || err != nil || r.Status != "PASS" {
		t.Errorf("--workers 4 --config fine.yaml --json=true: exit %d, %v, %q", code, err, stderr)
	}
	if _, stdout, _ := run(t, "inspect", good, "--json=false"); strings.HasPrefix(stdout, "{") {
		t.Errorf("--json=false printed JSON: %q", stdout)
	}
}

func TestSettingsPrecedence(t *testing.T) {
	good := writeModel(t, tinyLlama)
	cfg := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(cfg, []byte("prompt_style: instruct\ntimeout: 1m\n"), 0o644)
	// The file says instruct; the environment says base; the flag is invalid and must win (exit 2).
	t.Setenv("PHASE0_PROMPT_STYLE", "base")
	if code, _, stderr := run(t, "baseline", good, "--config", cfg, "--prompt-style", "bogus"); code != 2 || !strings.Contains(stderr, `"bogus"`) {
		t.Errorf("flag did not win: exit %d, %s", code, stderr)
	}
	t.Setenv("PHASE0_PROMPT_STYLE", "weird")
	if code, _, stderr := run(t, "baseline", good, "--config", cfg); code != 2 || !strings.Contains(stderr, `"weird"`) {
		t.Errorf("env did not beat the file: exit %d, %s", code, stderr)
	}
	os.Unsetenv("PHASE0_PROMPT_STYLE")
	os.WriteFile(cfg, []byte("prompt_style: fromfile\n"), 0o644)
	if code, _, stderr := run(t, "baseline", good, "--config", cfg); code != 2 || !strings.Contains(stderr, `"fromfile"`) {
		t.Errorf("the file did not beat the defaults: exit %d, %s", code, stderr)
	}
	t.Setenv("PHASE0_TIMEOUT", "0s")
	if code, _, stderr := run(t, "inspect", good); code != 2 || !strings.Contains(stderr, `PHASE0_TIMEOUT: "0s" is not a duration with a unit (such as 90s or 30m) in [1s, 168h]`) {
		t.Errorf("env timeout: exit %d, %s", code, stderr)
	}
}

// TestJSONOnEveryUsageError: with --json, exactly one JSON object (status
// ERROR) and exit 2, whatever was wrong with the invocation.
func TestJSONOnEveryUsageError(t *testing.T) {
	good := writeModel(t, tinyLlama)
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"inspect", good, "--workers", "-1", "--json"}, nil, `--workers: "-1" is not a base-10 integer in [0, 1024]`},
		{[]string{"baseline", good, "--timeout", "abc", "--json"}, nil, `--timeout: "abc" is not a duration with a unit`},
		{[]string{"baseline", good, "--timeout", "0", "--json"}, nil, `--timeout: "0" is not a duration with a unit`},
		{[]string{"baseline", good, "--prompt-style", "chatty", "--json"}, nil, `"chatty"`},
		{[]string{"baseline", good, "--decode", "-1", "--json"}, nil, "--decode"},
		{[]string{"baseline", good, "--decode", "100", "--json"}, nil, "does not fit max_seq 64"},
		{[]string{"inspect", good, "--json"}, map[string]string{"PHASE0_TIMEOUT": "soon"}, `PHASE0_TIMEOUT: "soon"`},
		{[]string{"inspect", good, "--json"}, map[string]string{"PHASE0_MAX_SEQ": "0"}, "PHASE0_MAX_SEQ"},
		{[]string{"inspect", good, "--json"}, map[string]string{"PHASE0_WORKERS": "many"}, "PHASE0_WORKERS"},
		{[]string{"inspect", good, "--json"}, map[string]string{"PHASE0_SCAN": "maybe"}, "PHASE0_SCAN"},
		{[]string{"baseline", good, "--max-perplexity-ratio", "0", "--json"}, nil, `--max-perplexity-ratio: "0" is not a finite decimal number in [0.0001, 1000]`},
		{[]string{"baseline", good, "--max-perplexity-ratio", "tenth", "--json"}, nil, `--max-perplexity-ratio: "tenth"`},
		{[]string{"inspect", good, "--json"}, map[string]string{"PHASE0_MAX_PERPLEXITY_RATIO": "-0.5"}, `PHASE0_MAX_PERPLEXITY_RATIO: "-0.5"`},
		{[]string{"inspect", good, "--json"}, map[string]string{"PHASE0_MAX_PERPLEXITY_RATIO": "NaN"}, "PHASE0_MAX_PERPLEXITY_RATIO"},
		{[]string{"inspect", good, "--json", "--config", "/dev/zero"}, nil, "not a regular file"},
		{[]string{"inspect", good, "--json", "--config", "/no/such.yaml"}, nil, "--config"},
		{[]string{"inspect", "--json"}, nil, "inspect needs a MODEL"},
		{[]string{"inspect", "-weird", "--json"}, nil, "unknown shorthand flag"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, stdout, stderr := run(t, tc.args...)
			dec := json.NewDecoder(strings.NewReader(stdout))
			var rep struct {
				Status string `json:"status"`
				Error  string `json:"error"`
			}
			if err := dec.Decode(&rep); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
			}
			if dec.More() {
				t.Errorf("more than one JSON value on stdout:\n%s", stdout)
			}
			if code != 2 || rep.Status != "ERROR" || !strings.Contains(rep.Error, tc.want) {
				t.Errorf("exit %d, status %s, error %q; want exit 2, ERROR mentioning %q (stderr %q)", code, rep.Status, rep.Error, tc.want, stderr)
			}
		})
	}
	// A YAML number beyond int64 is refused, not wrapped to a negative.
	cfg := filepath.Join(t.TempDir(), "big.yaml")
	os.WriteFile(cfg, []byte("decode: 99999999999999999999\n"), 0o644)
	if code, _, stderr := run(t, "baseline", good, "--config", cfg); code != 2 || !strings.Contains(stderr, "99999999999999999999") && !strings.Contains(stderr, "1e+20") {
		t.Errorf("huge decode: exit %d, %s", code, stderr)
	}
}

// TestMaxPerplexityRatioLayers: the gate-2 limit comes from the default
// file, a --config file, PHASE0_MAX_PERPLEXITY_RATIO and the flag, in that
// order of increasing precedence.
func TestMaxPerplexityRatioLayers(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "ratio.yaml")
	os.WriteFile(cfg, []byte("max_perplexity_ratio: 0.25\n"), 0o644)
	for _, tc := range []struct {
		args []string
		env  string
		want float64
	}{
		{nil, "", 0.1},
		{[]string{"--config", cfg}, "", 0.25},
		{[]string{"--config", cfg}, "0.05", 0.05},
		{[]string{"--config", cfg, "--max-perplexity-ratio", "0.5"}, "0.05", 0.5},
	} {
		if tc.env != "" {
			t.Setenv("PHASE0_MAX_PERPLEXITY_RATIO", tc.env)
		} else {
			os.Unsetenv("PHASE0_MAX_PERPLEXITY_RATIO")
		}
		var got float64
		root := &cobra.Command{Use: "phase0", SilenceUsage: true, SilenceErrors: true}
		root.PersistentFlags().String("config", "", "")
		c := &cobra.Command{Use: "baseline", RunE: func(cmd *cobra.Command, _ []string) error {
			s, _, err := layerSettings(cmd, io.Discard, nil)
			if err != nil {
				return err
			}
			got = s.MaxPerplexityRatio
			return nil
		}}
		c.Flags().String("max-perplexity-ratio", "", "")
		root.AddCommand(c)
		root.SetArgs(append([]string{"baseline"}, tc.args...))
		if err := root.Execute(); err != nil {
			t.Fatalf("%v env %q: %v", tc.args, tc.env, err)
		}
		if got != tc.want {
			t.Errorf("%v env %q: max_perplexity_ratio %g, want %g", tc.args, tc.env, got, tc.want)
		}
	}
}
