package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// Overrides are the Python API's keyword options: YAML keys above flags, env
// and files, parsed by the same strict parser.
func TestOverrides(t *testing.T) {
	good := writeModel(t, tinyLlama)
	tests := []struct {
		name      string
		overrides map[string]any
		args      []string
		code      int
		scanned   bool
		errText   string
	}{
		{"none", nil, nil, 0, false, ""},
		{"scan", map[string]any{"scan": true}, nil, 0, true, ""},
		{"beats the flag", map[string]any{"scan": false}, []string{"--scan"}, 0, false, ""},
		{"a setting inspect does not read", map[string]any{"refresh": true}, nil, 2, false, "option refresh: inspect does not read this setting (run, reference do)"},
		{"a setting without a flag is read everywhere", map[string]any{"max_seq": json.Number("8")}, nil, 0, false, ""},
		{"a mapping for a plain setting", map[string]any{"name.x": true}, nil, 2, false, "option name: a mapping is not a string"},
		{"10**400", map[string]any{"workers": json.Number("1" + strings.Repeat("0", 400))}, nil, 2, false, `option workers: "1000000000000000000000000000000000000000000000000000000000000000"… (401 bytes) is not a base-10 integer in [0, 1024]`},
		{"nested key", map[string]any{"cpu_helpers.attention_fallback": false}, nil, 0, false, ""},
		{"from JSON numbers", map[string]any{"workers": json.Number("2")}, nil, 0, false, ""},
		{"unknown", map[string]any{"scann": true}, nil, 2, false, `unknown option "scann"`},
		{"a section is not a leaf", map[string]any{"cpu_helpers": map[string]any{}}, nil, 2, false, `option cpu_helpers: a section of settings`},
		{"bad value names the option", map[string]any{"workers": -1}, nil, 2, false, `option workers: "-1" is not a base-10 integer in [0, 1024]`},
		{"bad bool", map[string]any{"scan": "maybe"}, nil, 2, false, `option scan: "maybe" is not true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"inspect", good, "--json"}, tt.args...)
			code := Execute(context.Background(), args, &out, &errb, Options{Version: "test", Overrides: tt.overrides})
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, errb.String())
			}
			var rep struct {
				Error string `json:"error"`
				Gates struct {
					Weights *struct {
						Scanned bool `json:"scanned"`
					} `json:"weights"`
				} `json:"gates"`
			}
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("stdout is not one JSON report: %v\n%s", err, out.String())
			}
			if tt.errText != "" && !strings.Contains(rep.Error, tt.errText) {
				t.Errorf("error %q lacks %q", rep.Error, tt.errText)
			}
			if tt.code == 0 && rep.Gates.Weights.Scanned != tt.scanned {
				t.Errorf("scanned %v, want %v", rep.Gates.Weights.Scanned, tt.scanned)
			}
		})
	}
}

// A cancelled context is an interrupted run: exit 130, as SIGINT gives the CLI.
func TestCancelledContextIsInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	if code := Execute(ctx, []string{"inspect", writeModel(t, tinyLlama), "--json"}, &out, &errb, Options{}); code != 130 {
		t.Fatalf("exit %d, want 130; stderr:\n%s", code, errb.String())
	}
}

// The Python extension runs Execute from several threads at once; run with
// -race this finds shared state in the command line (cobra, the settings layers, flags).
func TestConcurrentExecute(t *testing.T) {
	good := writeModel(t, tinyLlama)
	moe := writeModel(t, strings.Replace(tinyLlama, `"vocab_size"`, `"num_local_experts": 8, "vocab_size"`, 1))
	done := make(chan string)
	for i := range 8 {
		go func() {
			model, want := good, 0
			if i%2 == 1 {
				model, want = moe, 1
			}
			var out, errb bytes.Buffer
			code := Execute(context.Background(), []string{"inspect", model, "--json"}, &out, &errb,
				Options{Version: "test", Overrides: map[string]any{"scan": i%4 == 0}})
			if code != want {
				done <- strings.TrimSpace(errb.String())
				return
			}
			done <- ""
		}()
	}
	for range 8 {
		if msg := <-done; msg != "" {
			t.Error(msg)
		}
	}
}
