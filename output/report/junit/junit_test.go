package junit

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phase0/gate/config"
	"phase0/gate/verdict"
	"phase0/gate/weights"
	"phase0/internal/testenv"
	"phase0/output/report"
	"phase0/read/model"
)

// fleet is one report of every kind a list holds.
func fleet() []Case {
	pass := &report.Report{Model: "Qwen/Qwen3-0.6B", ModelDir: "/hf/qwen3", Status: verdict.Pass, Seconds: 17.04,
		Gates: report.Gates{Weights: &weights.Result{Section: verdict.Section{Status: verdict.Pass, Summary: "311 tensors, 0 missing"}}}}
	reused := &report.Report{Model: "/models/tiny-llama", Status: verdict.Pass, Seconds: 0.1,
		ReusedFrom: &report.ReusedFrom{Path: "/ws/tiny_llama/report.json", Recorded: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}}
	fail := &report.Report{Model: "meta-llama/Llama-3.2-1B", Status: verdict.Fail, Seconds: 40,
		Gates: report.Gates{
			Weights: &weights.Result{Section: verdict.Section{Status: verdict.Pass, Summary: "146 tensors"}},
			ConfigConsistency: &config.Consistency{Section: verdict.Section{Status: verdict.Fail, Summary: "38 checks, 1 mismatches",
				Findings: []string{"config rope_scaling (behaviour): the table ignores config.json's rope scaling (llama3, factor 32) <&> \"quoted\" ]]>"}}},
		}}
	rejected := &report.Report{Model: "amd/Llama-3.2-1B-Instruct-awq-uint4-asym-g128-bf16-lmhead", Status: verdict.Rejected, Seconds: 0.1,
		Rejections: []model.Rejection{{Code: "quantized", Message: `config.json has quantization_config (quant_method "awq")`}}}
	errored := &report.Report{Model: "Qwen/Qwen2.5-7B", Status: verdict.Error, Seconds: 0.2,
		Error: "model not available from the hub: Qwen/Qwen2.5-7B is not in the cache (/hf/hub) and the hub is switched off\nsecond line \x01 control"}
	return []Case{{pass, "hf_models.txt:1"}, {reused, "hf_models.txt:2"}, {fail, "hf_models.txt:3"}, {rejected, "hf_models.txt:5"}, {errored, "hf_models.txt:9"}}
}

type parsed struct {
	Name   string `xml:"name,attr"`
	Suites []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Errors   int    `xml:"errors,attr"`
		Props    []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Name    string `xml:"name,attr"`
			Class   string `xml:"classname,attr"`
			Failure *struct {
				Type    string `xml:"type,attr"`
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Type    string `xml:"type,attr"`
				Message string `xml:"message,attr"`
			} `xml:"error"`
			Out string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// Each verdict becomes what a CI system shows for it.
func TestJUnitVerdicts(t *testing.T) {
	b, err := Marshal(Suite{Command: "run", Version: "v1", Shard: "2/4", Started: time.Unix(0, 0), Seconds: 57.4, Cases: fleet()})
	if err != nil {
		t.Fatal(err)
	}
	var doc parsed
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d testsuites, want 1 per command", len(doc.Suites))
	}
	s := doc.Suites[0]
	if s.Name != "phase0 run" || s.Tests != 5 || s.Failures != 2 || s.Errors != 1 {
		t.Errorf("testsuite %q tests=%d failures=%d errors=%d, want \"phase0 run\" 5 2 1", s.Name, s.Tests, s.Failures, s.Errors)
	}
	if len(s.Props) != 2 || s.Props[1].Name != "phase0.shard" || s.Props[1].Value != "2/4" {
		t.Errorf("properties %+v, want the version and shard 2/4", s.Props)
	}
	c := s.Cases
	for i := range 2 {
		if c[i].Failure != nil || c[i].Error != nil || c[i].Class != "phase0.run" {
			t.Errorf("%s: a PASS must be a passing testcase of phase0.run: %+v", c[i].Name, c[i])
		}
	}
	if !strings.Contains(c[1].Out, "reused: inputs unchanged since 2026-03-01T12:00:00Z, verdict from /ws/tiny_llama/report.json") {
		t.Errorf("reused PASS system-out = %q", c[1].Out)
	}
	if f := c[2].Failure; f == nil || f.Type != "FAIL" || f.Message != "config consistency: 38 checks, 1 mismatches" || !strings.Contains(f.Text, `<&> "quoted" ]]>`) {
		t.Errorf("FAIL testcase: %+v, want a failure naming the first failing gate, its finding as text", f)
	}
	if f := c[3].Failure; f == nil || f.Type != "REJECTED" || !strings.HasPrefix(f.Message, "[quantized] config.json has quantization_config") {
		t.Errorf("REJECTED testcase: %+v, want a failure with its reason code", f)
	}
	if e := c[4].Error; e == nil || e.Type != "ERROR" || !strings.HasPrefix(e.Message, "model not available from the hub") || c[4].Failure != nil {
		t.Errorf("ERROR testcase: %+v, want an error", e)
	}
}

// Every rendering is valid against the JUnit schema CI systems read: a
// list of every verdict, one model, an empty shard; and the validator
// really checks (a testcase without a name is refused).
func TestJUnitValidAgainstSchema(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]Suite{
		"list.xml":   {Command: "run", Version: "v1", Shard: "2/4", Hostname: "ci-1", Started: time.Now(), Seconds: 1234.5678, Cases: fleet()},
		"single.xml": {Command: "inspect", Version: "dev", Started: time.Now(), Cases: fleet()[3:4]},
		"empty.xml":  {Command: "run", Version: "v1", Shard: "3/4", Started: time.Now()},
	}
	var files []string
	for name, s := range cases {
		path := filepath.Join(dir, name)
		if err := WriteFile(path, s); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	bad := filepath.Join(dir, "bad.xml")
	os.WriteFile(bad, []byte(`<testsuites><testsuite name="x" tests="1"><testcase classname="c"/></testsuite></testsuites>`), 0o644)
	got := testenv.ValidateXML(t, testenv.JUnitXSD(), append(files, bad)...)
	for i, f := range files {
		if got[i] != "" {
			b, _ := os.ReadFile(f)
			t.Errorf("%s is not valid JUnit: %s\n%s", filepath.Base(f), got[i], b)
		}
	}
	if !strings.Contains(got[len(files)], "name") {
		t.Errorf("the validator accepted a testcase without a name: %q", got[len(files)])
	}
}

// --junit replaces only a report phase0 wrote, whole (issue 36): a file
// that merely begins like one, an empty file (what `> f` leaves), a report
// with something appended or edited, are refused; every report Marshal
// renders — the fleet with its control characters, quotes and ]]>, an
// empty suite — is replaceable.
func TestCheckReplaceable(t *testing.T) {
	dir := t.TempDir()
	own, err := Marshal(Suite{Command: "run", Version: "1.2.3", Shard: "2/4", Hostname: "ci", Started: time.Unix(0, 0), Seconds: 3, Cases: fleet()})
	if err != nil {
		t.Fatal(err)
	}
	empty, err := Marshal(Suite{Command: "inspect", Version: "v"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, body string
		ok         bool
	}{
		{"a report phase0 wrote", string(own), true},
		{"an empty suite phase0 wrote", string(empty), true},
		{"empty", "", false},
		{"only the opening", `<testsuites name="phase0">`, false},
		{"the opening after the header", xml.Header + `<testsuites name="phase0"></testsuites>` + "\n", false},
		{"a report with a line appended", string(own) + "my notes\n", false},
		{"a report re-indented by an editor", strings.ReplaceAll(string(own), "\n  ", "\n\t"), false},
		{"a report with a second suite", strings.Replace(string(own), "</testsuites>", `<testsuite name="mine"></testsuite></testsuites>`, 1), false},
		{"a config.json", `{"architectures": ["LlamaForCausalLM"]}`, false},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".xml")
		if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		err := CheckReplaceable(path)
		if tc.ok && err != nil || !tc.ok && (err == nil || !strings.Contains(err.Error(), path)) {
			t.Errorf("%s: %v; want replaceable %v (a refusal naming the file)", tc.name, err, tc.ok)
		}
	}
	if err := CheckReplaceable(filepath.Join(dir, "missing.xml")); err != nil {
		t.Errorf("a missing file: %v", err)
	}
}
