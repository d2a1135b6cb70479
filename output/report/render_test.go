package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phase0/gate/baseline"
	"phase0/gate/config"
	"phase0/gate/verdict"
	"phase0/gate/weights"
	"phase0/read/model"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current renderings")

// fullReport has every section the renderings show: a reused verdict, a
// validated existing workspace with a foreign file and a record outside it,
// a rejection, a failing gate with findings, warnings, a baseline with its
// top-10, continuation and calibration, a reference and the stages.
func fullReport() *Report {
	started := time.Date(2026, 12, 3, 19, 47, 0, 0, time.UTC)
	w := weights.NewResult()
	w.FailWith("tensor %s: shape [3] want [4]", "model.norm.weight")
	w.Summary = "1 of 3 tensors wrong | see findings"
	w.Warnings = append(w.Warnings, "an unused tensor: lm_head.bias")
	cc := config.New()
	cc.Summary = "12 checks agree"
	b := &baseline.Baseline{Section: verdict.NewSection(), Runner: "bundled", Prompt: "The capital of France is a city whose name is rather long", PromptStyle: "plain",
		Tokens: []int{1, 450, 7483}, Top1Token: 3681, Top1Text: " Paris",
		Top10:   []baseline.Ranked{{ID: 3681, Text: " Paris", Prob: 0.8125}, {ID: 263, Text: " a very long token text", Prob: 0.0625}},
		Logits:  baseline.Stats{N: 512, Min: -3.25, Max: 9.5, Mean: 0.125, Std: 1.5, Entropy: 0.75, MaxEntr: 6.238, Top1Prob: 0.8125},
		Reasons: []string{}, Warnings: []string{"greedy continuation: repeats"},
		Decode: &baseline.Continuation{IDs: []int{3681, 29889}, Text: " Paris."},
		Calibration: &baseline.Calibration{Passage: "The sun rose.", Tokens: 4, Predicted: 3, Perplexity: 20, Limit: 51.2, VocabSize: 512,
			MaxRatio: 0.1, Ratio: 0.0390625, Pass: true},
	}
	b.Summary = "top-1 3681 \" Paris\" p=0.812"
	ref := &Reference{Section: verdict.NewSection(), Dir: "/tmp/ws/reference", KeySHA256: strings.Repeat("ab", 32), Dtype: "bfloat16",
		Runner: "bundled", Prompts: 5, Steps: 6, TopK: 10, Probes: 31, Bytes: 123456, Seconds: 2, SecondsLoad: 0.5, SecondsDecode: 1.25, SecondsDiagnosis: 0.25, TorchThreads: 2}
	ref.Summary = "recorded /tmp/ws/reference: " + ref.Describe()
	return &Report{
		Tool: "phase0", Version: "v0.test", Command: "run", Model: "Qwen/Qwen3-0.6B", ModelID: "Qwen/Qwen3-0.6B", ModelDir: "/cache/qwen3",
		Revision: "0123abcd", Source: "copied from /src", Status: verdict.Fail, Error: "one gate failed",
		ReusedFrom:   &ReusedFrom{Path: "/tmp/rec/report.json", Recorded: started.Add(-time.Hour)},
		Architecture: "Qwen3ForCausalLM", Family: "",
		Config:    &model.Config{NLayers: 2, EmbDim: 64, NHeads: 4, NKVHeads: 2, HeadDim: 16, HiddenDim: 128, VocabSize: 512, RopeBase: 1e6, RMSNormEps: 1e-6, TieWordEmbeddings: true, QKNorm: true},
		Defaulted: []model.Defaulted{}, Rejections: []model.Rejection{{Code: "rope", Message: "unsupported rope scaling"}},
		Gates: Gates{Weights: w, ConfigConsistency: cc, HFBaseline: b},
		Workspace: &Workspace{Dir: "/tmp/ws", Name: "qwen3_0_6b", Mode: ModeValidatedExisting, Foreign: []string{"verify_adapter.py"},
			HelpersKept: []string{"rms_norm", "rope"}, RecordDir: "/tmp/rec", ReportMD: "/tmp/rec/report.md"},
		Warnings:  []string{"a run-level warning"},
		Stages:    []Stage{{Name: "resolve", Status: verdict.Pass, Seconds: 0.125}, {Name: "weights", Status: verdict.Fail, Seconds: 1.5}},
		Started:   started,
		Seconds:   3.25,
		Reference: ref,
	}
}

// TestRenderingsMatchTheGoldens pins the text, Markdown and JSON renderings
// byte for byte (rewrite with -update after a deliberate change).
func TestRenderingsMatchTheGoldens(t *testing.T) {
	r := fullReport()
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]byte{"text.golden": []byte(r.Text()), "report.md.golden": []byte(r.Markdown("top10.png")), "report.json.golden": js} {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the rendering:\n%s", path, got)
		}
	}
}

// TestWriteRecordsTheFilesItWrote: Write puts report.json (what JSON says,
// plus the paths), report.md naming the chart, and a PNG chart in dir.
func TestWriteRecordsTheFilesItWrote(t *testing.T) {
	r := fullReport()
	dir := filepath.Join(t.TempDir(), "rec")
	if err := Write(r, dir); err != nil {
		t.Fatal(err)
	}
	if r.Workspace.ReportJSON != filepath.Join(dir, "report.json") || r.Workspace.ReportMD != filepath.Join(dir, "report.md") {
		t.Errorf("workspace section names %q and %q, want the files in %s", r.Workspace.ReportJSON, r.Workspace.ReportMD, dir)
	}
	var back Report
	data, err := os.ReadFile(r.Workspace.ReportJSON)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &back); err != nil || back.Workspace.ReportMD != r.Workspace.ReportMD {
		t.Errorf("report.json does not read back with its paths (%v): %s", err, data)
	}
	md, err := os.ReadFile(r.Workspace.ReportMD)
	if err != nil || !strings.Contains(string(md), "](top10.png)") {
		t.Errorf("report.md does not show the chart (%v)", err)
	}
	png, err := os.ReadFile(filepath.Join(dir, "top10.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("top10.png is not a PNG (%v, %d bytes)", err, len(png))
	}
}
