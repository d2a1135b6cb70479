package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/internal/testenv"
)

// TestRunListRefusals: a list refuses the settings that name one model's
// files, wherever they come from, and lists it cannot read; exit 2 and,
// with --json, one JSON object with status ERROR. Nothing runs.
func TestRunListRefusals(t *testing.T) {
	good := writeModel(t, tinyLlama)
	list := filepath.Join(t.TempDir(), "hf_models.txt")
	if err := os.WriteFile(list, []byte("# two models\n"+good+"\n"+good+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty.txt")
	if err := os.WriteFile(empty, []byte("# nothing\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nameFile := filepath.Join(t.TempDir(), "nm.yaml")
	if err := os.WriteFile(nameFile, []byte("name: foo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"name flag", []string{"run", "@" + list, "--name", "mine"}, nil, `--name "mine" does not apply to a model list: each model of a list gets its own workspace`},
		{"name env, two arguments", []string{"run", good, good}, map[string]string{"PHASE0_NAME": "mine"}, `PHASE0_NAME "mine" does not apply to a model list`},
		{"report dir flag", []string{"run", "@" + list, "--report-dir", out}, nil, `--report-dir "` + out + `" does not apply to a model list: each model of a list records its report in its own workspace`},
		{"name in a config file", []string{"run", "@" + list, "--config", nameFile}, nil, nameFile + `:1: name "foo" does not apply to a model list`},
		{"no such list", []string{"run", "@/no/such/list.txt"}, nil, "bad model list"},
		{"empty list", []string{"run", "@" + empty}, nil, "lists no models"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, stdout, stderr := run(t, append(tc.args, "--out-dir", out)...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 naming %q", code, stdout, stderr, tc.want)
			}
			code, stdout, _ = run(t, append(tc.args, "--out-dir", out, "--json")...)
			var rep struct{ Status, Error string }
			dec := json.NewDecoder(strings.NewReader(stdout))
			if err := dec.Decode(&rep); err != nil || dec.More() || code != 2 || rep.Status != "ERROR" || !strings.Contains(rep.Error, tc.want) {
				t.Errorf("--json: exit %d, %v, stdout:\n%s", code, err, stdout)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("a refused list wrote %d entries into the out dir", len(entries))
			}
		})
	}
}

// TestRunListOfRejectedModels: two models the architecture gate refuses
// (a vision model, an AWQ packaging) get one row each, in order, in one
// table or one {status, models[]} object; exit 1, nothing written.
func TestRunListOfRejectedModels(t *testing.T) {
	t.Setenv("PHASE0_PYTHON", testenv.Python(t))
	vision := writeModel(t, `{"architectures": ["SmolVLMForConditionalGeneration"], "model_type": "smolvlm",
 "text_config": {"hidden_size": 960}, "vision_config": {"hidden_size": 768}}`)
	awq := writeModel(t, strings.TrimSuffix(tinyLlama, "}")+`, "quantization_config": {"bits": 4, "quant_method": "awq"}}`)
	out := t.TempDir()

	code, stdout, stderr := run(t, "run", vision, awq, "--out-dir", out)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	lines := strings.Split(stdout, "\n")
	first, second := strings.Index(stdout, vision+" (argument 1)"), strings.Index(stdout, awq+" (argument 2)")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "MODEL") || !strings.HasPrefix(lines[1], vision[:10]) || !strings.HasPrefix(lines[2], awq[:10]) || first < 0 || second < first {
		t.Errorf("table rows not in argument order:\n%s", stdout)
	}
	flat := strings.Join(strings.Fields(stdout), " ") // reasons wrap at 120 columns
	for _, want := range []string{"[unsupported_architecture] architecture SmolVLMForConditionalGeneration", `[quantized] config.json has quantization_config (quant_method "awq")`, "2 model(s)", "REJECTED (2 REJECTED)"} {
		if !strings.Contains(flat, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "[1/2] "+vision+" (argument 1)") || !strings.Contains(stderr, "[2/2] "+awq+" (argument 2)") {
		t.Errorf("progress does not name each model:\n%s", stderr)
	}

	code, stdout, _ = run(t, "run", vision, awq, "--out-dir", out, "--json")
	var b struct {
		Status string `json:"status"`
		Models []struct {
			Model      string                  `json:"model"`
			ListedAt   string                  `json:"listed_at"`
			Status     string                  `json:"status"`
			Rejections []struct{ Code string } `json:"rejections"`
		} `json:"models"`
	}
	if err := json.Unmarshal([]byte(stdout), &b); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, stdout)
	}
	if code != 1 || b.Status != "REJECTED" || len(b.Models) != 2 || b.Models[0].Model != vision || b.Models[1].ListedAt != "argument 2" ||
		len(b.Models[1].Rejections) != 1 || b.Models[1].Rejections[0].Code != "quantized" {
		t.Errorf("exit %d, JSON:\n%s", code, stdout)
	}
	// README's schema: interrupted is always there, false included.
	var keys struct {
		Interrupted *bool `json:"interrupted"`
		Models      []struct {
			Interrupted *bool `json:"interrupted"`
		} `json:"models"`
	}
	if err := json.Unmarshal([]byte(stdout), &keys); err != nil || keys.Interrupted == nil || *keys.Interrupted ||
		len(keys.Models) != 2 || keys.Models[0].Interrupted == nil || keys.Models[1].Interrupted == nil {
		t.Errorf("the list's and each model's report lack interrupted: false:\n%s", stdout)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("rejected models wrote %d entries into the out dir", len(entries))
	}
}

// A bad workspace name is refused with the settings (issue 36 item 6),
// from every source, before the model is even looked up (here it does not
// exist), saying what is wrong with the name given.
func TestBadNameRefusedWithTheSettings(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(cfg, []byte("name: ../../etc/evil\n"), 0o644)
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"run", "/no/such/model", "--name", "../../etc/evil"}, "", `--name: "../../etc/evil" is not a workspace name: it is a path`},
		{[]string{"reference", "/no/such/model", "--name", "Qwen3"}, "", `--name: "Qwen3" is not a workspace name: it holds upper-case letters (qwen3 would do)`},
		{[]string{"run", "/no/such/model"}, "../x", `PHASE0_NAME: "../x" is not a workspace name`},
		{[]string{"run", "/no/such/model", "--config", cfg}, "", `s.yaml:1: name: "../../etc/evil" is not a workspace name`},
	} {
		if tc.env != "" {
			t.Setenv("PHASE0_NAME", tc.env)
		}
		code, _, stderr := run(t, tc.args...)
		os.Unsetenv("PHASE0_NAME")
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "pass --name") || strings.Contains(stderr, "model not found") {
			t.Errorf("%v: exit %d, %q; want exit 2 saying %q", tc.args, code, stderr, tc.want)
		}
	}
}

// PHASE0_PYSHIM at a folder without phase0_shim is the setting's fault:
// exit 2 naming it before any model work (issue 36 item 3), not a model
// FAIL "No module named 'phase0_shim'".
func TestPyShimMustHoldThePackage(t *testing.T) {
	good := writeModel(t, tinyLlama)
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	for _, tc := range []struct{ dir, want string }{
		{"/no/such/folder", `PHASE0_PYSHIM: pyshim "/no/such/folder": no such folder`},
		{t.TempDir(), "it holds no phase0_shim/__init__.py"},
		{file, "it is a regular file, not a folder"},
	} {
		t.Setenv("PHASE0_PYSHIM", tc.dir)
		code, stdout, stderr := run(t, "baseline", good, "--json")
		var r struct {
			Status string
			Stages []any
		}
		json.Unmarshal([]byte(stdout), &r)
		if code != 2 || r.Status != "ERROR" || len(r.Stages) != 0 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "No module named") {
			t.Errorf("PHASE0_PYSHIM=%s: exit %d, %s, %d stages, %q; want exit 2 saying %q", tc.dir, code, r.Status, len(r.Stages), stderr, tc.want)
		}
	}
}
