package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMessagesNameTheCulprit (issue 10 item 11): each bad input is refused
// with the exit code of its kind, exactly one JSON object, and a message
// naming the file, field, variable or value at fault.
func TestMessagesNameTheCulprit(t *testing.T) {
	good := writeModel(t, tinyLlama)
	withConfig := func(config string) string {
		dir := writeModel(t, tinyLlama)
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	ropeDup := withConfig(strings.Replace(tinyLlama, `"torch_dtype"`, `"rope_parameters": {"rope_type": "default", "rope_theta": 10000, "rope_theta": 500000}, "torch_dtype"`, 1))
	deepDup := withConfig(strings.Replace(tinyLlama, `"torch_dtype"`, `"quantization_config": {"modules": [{"name": "a", "name": "b"}]}, "torch_dtype"`, 1))
	notUTF8 := withConfig(strings.Replace(tinyLlama, `"torch_dtype"`, "\"note\": \"caf\xe9\", \"torch_dtype\"", 1))
	indexDir := writeModel(t, tinyLlama)
	if err := os.Mkdir(filepath.Join(indexDir, "model.safetensors.index.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	bigDecode := filepath.Join(t.TempDir(), "big.yaml")
	os.WriteFile(bigDecode, []byte("decode: 99999999999999999999\n"), 0o644)

	// A hub model cached under a pull-request ref: huggingface_hub keeps the
	// ref refs/pr/1 in refs/refs/pr/1.
	hub := t.TempDir()
	const sha = "0123456789abcdef0123456789abcdef01234567"
	repo := filepath.Join(hub, "models--org--name")
	snap := filepath.Join(repo, "snapshots", sha)
	if err := os.CopyFS(snap, os.DirFS(good)); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"tokenizer.json": "{}", "tokenizer_config.json": "{}", filepath.Join("..", "..", "refs", "refs", "pr", "1"): sha} {
		p := filepath.Join(snap, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HF_HUB_CACHE", hub)
	t.Setenv("HF_HUB_OFFLINE", "1")
	t.Setenv("PHASE0_CACHE", t.TempDir())

	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		code int
		want []string // substrings of the report's error or findings
		not  []string
	}{
		{"timeout word", []string{"inspect", good}, map[string]string{"PHASE0_TIMEOUT": "soon"}, 2, []string{`PHASE0_TIMEOUT: "soon" is not a duration with a unit`}, []string{"got 0s"}},
		{"yaml decode beyond int64", []string{"baseline", good, "--config", bigDecode}, nil, 2, []string{bigDecode + ":1: decode", `"99999999999999999999" is not a base-10 integer in [0, 4096]`}, []string{"-9223372036854775808"}},
		{"workers word", []string{"inspect", good}, map[string]string{"PHASE0_WORKERS": "lots"}, 2, []string{`PHASE0_WORKERS: "lots" is not a base-10 integer`}, nil},
		{"workers negative", []string{"inspect", good}, map[string]string{"PHASE0_WORKERS": "-3"}, 2, []string{`PHASE0_WORKERS: "-3"`}, nil},
		{"scan word", []string{"inspect", good}, map[string]string{"PHASE0_SCAN": "yes please"}, 2, []string{`PHASE0_SCAN: "yes please" is not true or false`}, nil},
		// A misspelled setting's variable (spelled in two parts here so the
		// repository scan of settings' test does not take it for a variable).
		{"misspelled variable", []string{"inspect", good}, map[string]string{"PHASE0_" + "WORKRES": "2"}, 2, []string{"PHASE0_" + "WORKRES is not a phase0 setting's variable", "did you mean PHASE0_WORKERS?"}, nil},
		{"other variable's bad value", []string{"inspect", good}, map[string]string{"PHASE0_PROGRESS_INTERVAL": "-5"}, 2, []string{`PHASE0_PROGRESS_INTERVAL: "-5" is not a finite decimal number in [0, 3600]`, "docs/settings.md#environment-variables"}, nil},
		{"other variable misspelled", []string{"inspect", good}, map[string]string{"PHASE0_" + "MODELDIR": "/m"}, 2, []string{"did you mean PHASE0_MODEL_DIR?"}, nil},
		{"misspelled variable on compare", []string{"compare", good, good}, map[string]string{"PHASE0_" + "TIMOUT": "1m"}, 2, []string{"did you mean PHASE0_TIMEOUT?"}, nil},
		{"memory check word", []string{"inspect", good}, map[string]string{"PHASE0_MEMORY_CHECK": "perhaps"}, 2, []string{`PHASE0_MEMORY_CHECK: "perhaps" is not true or false`}, nil},
		{"decode beyond max_seq", []string{"baseline", good, "--decode", "65"}, nil, 2, []string{"decode 65 does not fit max_seq 64"}, nil},
		{"decode beyond a set max_seq", []string{"baseline", good, "--decode", "9"}, map[string]string{"PHASE0_MAX_SEQ": "8"}, 2, []string{"decode 9 does not fit max_seq 8"}, nil},
		{"duplicate in rope_parameters", []string{"inspect", ropeDup}, nil, 2, []string{"config.json", `key "rope_parameters.rope_theta" appears twice`}, nil},
		{"duplicate deep in a list", []string{"inspect", deepDup}, nil, 2, []string{`key "quantization_config.modules[].name" appears twice`}, nil},
		{"config not UTF-8", []string{"inspect", notUTF8}, nil, 2, []string{"config.json is not UTF-8: invalid byte 0xe9 at offset"}, nil},
		{"index is a directory", []string{"inspect", indexDir}, nil, 1, []string{"model.safetensors.index.json is a directory"}, nil},
		{"unicode hub id", []string{"inspect", "orgé/nämé"}, nil, 2, []string{`"orgé/nämé"`, `character 'é'`}, []string{`\xc3`, "'Ã'"}},
		{"pull-request revision", []string{"inspect", "org/name@refs/pr/1"}, nil, 0, nil, []string{"no such folder"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, stdout, stderr := run(t, append(tc.args, "--json")...)
			dec := json.NewDecoder(strings.NewReader(stdout))
			var rep struct {
				Status   string `json:"status"`
				Error    string `json:"error"`
				Revision string `json:"revision"`
			}
			if err := dec.Decode(&rep); err != nil {
				t.Fatalf("stdout is not a JSON object: %v\n%s", err, stdout)
			}
			if dec.More() {
				t.Errorf("more than one JSON value on stdout")
			}
			if code != tc.code {
				t.Errorf("exit %d, want %d (status %s, error %q)", code, tc.code, rep.Status, rep.Error)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, jsonText(w)) {
					t.Errorf("the report does not say %q:\n%s", w, stdout)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(stdout, jsonText(n)) || strings.Contains(stderr, n) {
					t.Errorf("the output says %q:\n%s\n%s", n, stdout, stderr)
				}
			}
			if tc.name == "pull-request revision" && rep.Revision != sha {
				t.Errorf("revision %q, want the commit %s that refs/pr/1 names", rep.Revision, sha)
			}
		})
	}
}

// jsonText is s as it appears inside a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}
