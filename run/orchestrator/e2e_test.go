package orchestrator

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/output/report"
	"phase0/output/scaffold"
	"phase0/python/warm"
	"phase0/python/worker"
)

// The worker re-executes this test binary; it must act as the worker then.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == worker.Subcommand {
		os.Exit(worker.Main())
	}
	if path := os.Getenv(holdLockEnv); path != "" {
		os.Exit(holdLock(path))
	}
	code := m.Run()
	testSessions.Close()
	os.Exit(code)
}

// testSessions lends the tests' runs warm Python sessions: torch starts
// once per session, not once per run. Tests that need a worker of their own
// (a session time-out, a crash, a changed environment) set
// Settings.Sessions to nil.
var testSessions = warm.New(2, 0)

func settingsFor(t *testing.T, llms string) *Settings {
	t.Helper()
	var progress bytes.Buffer
	var s *Settings
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("progress:\n%s", progress.String())
		}
		testenv.DumpFacts(t, progress.String, s.LLMSDir, s.OutDir)
	})
	s = &Settings{
		LLMSDir: llms, Python: testenv.Python(t), PyShimDir: testenv.PyShim(), MaxSeq: 64, Timeout: 5 * time.Minute,
		MemoryCheck: true, AttentionFallback: true, Progress: &progress, Sessions: testSessions,
	}
	// A folder without verify/ is not an llms tree: it only holds the workspaces.
	if _, err := os.Stat(filepath.Join(llms, "verify", "runners", "hf_runner.py")); llms != "" && err != nil {
		s.LLMSDir, s.OutDir = "", llms
	}
	return s
}

// ownSessions is a lender of the test's own, for runs on an interpreter
// of their own (cloneVenv): they share one warm session among themselves
// instead of churning the shared lender's two.
func ownSessions(t *testing.T) *warm.Sessions {
	w := warm.New(1, 0)
	t.Cleanup(w.Close)
	return w
}

// isolated makes s start a worker of its own, which sees the environment
// the test set.
func isolated(s *Settings) *Settings {
	s.Sessions = nil
	return s
}

func tiny(t *testing.T, name string) string {
	return filepath.Join(testenv.TinyModels(t), name)
}

func mustPass(t *testing.T, r *report.Report) {
	t.Helper()
	if r.Status != verdict.Pass {
		b, _ := r.JSON()
		t.Fatalf("status %s, want PASS:\n%s", r.Status, b)
	}
}

func TestRunEachFamily(t *testing.T) {
	t.Parallel() // independent of the other tests; overlaps their waits (make test runs -parallel 3)
	for _, m := range []struct{ dir, family string }{
		{"llama-llama3", "llama"}, {"mistral", "mistral"}, {"qwen2", "qwen2"}, {"qwen3", "qwen3"}, {"qwen2-sharded", "qwen2"},
	} {
		t.Run(m.dir, func(t *testing.T) {
			llms := t.TempDir()
			r := RunBF16(context.Background(), settingsFor(t, llms), tiny(t, m.dir), "test")
			mustPass(t, r)
			if r.Family != m.family || r.Gates.PyWeights.Status != verdict.Pass || r.Gates.HFBaseline.Runner != "bundled" {
				t.Errorf("family %s, python weights %+v, runner %s", r.Family, r.Gates.PyWeights, r.Gates.HFBaseline.Runner)
			}
			name := scaffold.DeriveName(m.dir)
			ws := filepath.Join(llms, name)
			for _, f := range []string{name + "_weights.py", name + "_cpu_helpers.py", "TODO.md", "README.md",
				"docs/development_progress/progress.md", "docs/development_progress/LESSONS.md", "docs/development_progress/debug_log.md",
				"docs/development_progress/phase0/report.json", "docs/development_progress/phase0/report.md", "docs/development_progress/phase0/top10.png"} {
				if _, err := os.Stat(filepath.Join(ws, f)); err != nil {
					t.Errorf("workspace lacks %s: %v", f, err)
				}
			}
			todo, _ := os.ReadFile(filepath.Join(ws, "TODO.md"))
			if !strings.Contains(string(todo), "- [x] 0: Build CPU Reference") {
				t.Errorf("Phase 0 not ticked:\n%s", todo)
			}
			progress, _ := os.ReadFile(filepath.Join(ws, "docs/development_progress/progress.md"))
			if !strings.Contains(string(progress), "Top-1: id ") || !strings.Contains(string(progress), "cpu_helpers kept: rms_norm") {
				t.Errorf("progress entry incomplete:\n%s", progress)
			}
			md := string(mustRead(t, filepath.Join(ws, "docs/development_progress/phase0/report.md")))
			if !strings.Contains(md, "](top10.png)") || !strings.Contains(md, "| 1 | "+fmt.Sprint(r.Gates.HFBaseline.Top1Token)+" |") {
				t.Errorf("report.md lacks the chart or the top-1 row:\n%s", md)
			}
			if png := mustRead(t, filepath.Join(ws, "docs/development_progress/phase0/top10.png")); !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
				t.Errorf("top10.png is not a PNG")
			}
			var fromDisk report.Report
			b, _ := os.ReadFile(filepath.Join(ws, "docs/development_progress/phase0/report.json"))
			if err := json.Unmarshal(b, &fromDisk); err != nil || fromDisk.Status != verdict.Pass {
				t.Errorf("report.json: %v, status %s", err, fromDisk.Status)
			}
		})
	}
}

func TestRunIsIdempotentAndProtectsEdits(t *testing.T) {
	t.Parallel() // independent of the other tests; overlaps their waits (make test runs -parallel 3)
	llms := t.TempDir()
	s := settingsFor(t, llms)
	model := tiny(t, "qwen3")
	mustPass(t, RunBF16(context.Background(), s, model, "test"))
	ws := filepath.Join(llms, "qwen3")
	progressPath := filepath.Join(ws, "docs/development_progress/progress.md")
	first, _ := os.ReadFile(progressPath)

	s.Fresh = true // unchanged inputs would reuse the verdict; generate must run to be checked
	again := RunBF16(context.Background(), s, model, "test")
	mustPass(t, again)
	if len(again.Workspace.Written) != 0 || !slices.Contains(again.Workspace.Unchanged, "qwen3_weights.py") || !slices.Contains(again.Workspace.Unchanged, "qwen3_cpu_helpers.py") {
		t.Errorf("re-run wrote %v, unchanged %v", again.Workspace.Written, again.Workspace.Unchanged)
	}
	second, _ := os.ReadFile(progressPath)
	if n := strings.Count(string(second), "## Phase 0: Build CPU Reference"); n != 1 || len(second) < len(first)-40 {
		t.Errorf("re-run left %d Phase 0 entries:\n%s", n, second)
	}

	// An edited module is the user's: validated as it is, never replaced,
	// with or without --force.
	weightsPy := filepath.Join(ws, "qwen3_weights.py")
	edited := append(mustRead(t, weightsPy), []byte("\n# tuned by hand\n")...)
	if err := os.WriteFile(weightsPy, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, force := range []bool{false, true} {
		s.Force = force
		r := RunBF16(context.Background(), s, model, "test")
		mustPass(t, r)
		if r.Workspace.Mode != report.ModeValidatedExisting || !bytes.Equal(mustRead(t, weightsPy), edited) {
			t.Fatalf("force=%v: mode %s; the user's edit kept: %v", force, r.Workspace.Mode, bytes.Equal(mustRead(t, weightsPy), edited))
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRejectedModelWritesNothing(t *testing.T) {
	dir := t.TempDir()
	cfg := mustRead(t, filepath.Join(testenv.RepoRoot(), "read/model/testdata/configs/mixtral-8x7b.json"))
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	llms := t.TempDir()
	r := RunBF16(context.Background(), settingsFor(t, llms), dir, "test")
	if r.Status != verdict.Rejected || ExitCode(r) != 1 || len(r.Rejections) == 0 {
		t.Fatalf("status %s, rejections %+v", r.Status, r.Rejections)
	}
	if entries, _ := os.ReadDir(llms); len(entries) != 0 {
		t.Errorf("a rejected model created %d entries in the llms folder", len(entries))
	}
}

func TestNaNWeightFails(t *testing.T) {
	s := settingsFor(t, "")
	r := BaselineRun(context.Background(), s, tiny(t, "llama-nan"), "test")
	if r.Status != verdict.Fail || r.Gates.HFBaseline == nil || r.Gates.HFBaseline.Logits.NaN == 0 {
		t.Fatalf("NaN weights: status %s, baseline %+v", r.Status, r.Gates.HFBaseline)
	}
	if !strings.Contains(strings.Join(r.Gates.HFBaseline.Reasons, " "), "NaN") {
		t.Errorf("reasons do not name the NaN: %q", r.Gates.HFBaseline.Reasons)
	}
	s.Scan = true
	in := Inspect(context.Background(), s, tiny(t, "llama-nan"), "test")
	nf := in.Gates.Weights.NonFinite
	if in.Status != verdict.Fail || len(nf) != 1 || nf[0].Name != "model.norm.weight" || nf[0].NaN != 64 {
		t.Errorf("scan: status %s, nonfinite %+v", in.Status, nf)
	}
}

// fakeVerify lays out an upstream-like verify/ tree whose runner misbehaves in prefill.
func fakeVerify(t *testing.T, prefillBody string) string {
	t.Helper()
	llms := t.TempDir()
	src := filepath.Join(testenv.PyShim(), "tests", "data", "llms", "verify")
	if err := os.CopyFS(filepath.Join(llms, "verify"), os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	runner := `from runners._records import PrefillRecord, DecodeStepRecord


class HfRunner:
    def __init__(self, model_name, config, max_seq, lite_mode=False, model=None):
        self.config = config

    def prefill(self, tokens):
` + prefillBody + `

    def decode_step(self, token, pos):
        raise NotImplementedError
`
	path := filepath.Join(llms, "verify", "runners", "hf_runner.py")
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(runner), 0o644); err != nil {
		t.Fatal(err)
	}
	return llms
}

func TestUpstreamVerifyTreeIsUsed(t *testing.T) {
	llms := filepath.Join(testenv.PyShim(), "tests", "data", "llms")
	r := BaselineRun(context.Background(), settingsFor(t, llms), tiny(t, "llama-llama3"), "test")
	mustPass(t, r)
	b := r.Gates.HFBaseline
	if b.Runner != "verify" || !strings.HasPrefix(b.Prompt, "The quick brown fox") || !strings.HasSuffix(b.RunnerPath, filepath.Join("verify", "runners", "hf_runner.py")) {
		t.Errorf("runner %s at %s, prompt %q", b.Runner, b.RunnerPath, b.Prompt)
	}
}

// TestLogitsEqualPlainTransformers compares what phase0 gets through the
// bridge with an independent transformers run on the same tokens, bitwise.
func TestLogitsEqualPlainTransformers(t *testing.T) {
	t.Parallel() // independent of the other tests; overlaps their waits (make test runs -parallel 3)
	s := settingsFor(t, "")
	model := tiny(t, "qwen2")
	r := BaselineRun(context.Background(), s, model, "test")
	mustPass(t, r)
	py := s.opsClient()
	defer py.Close()
	_, got, err := py.Baseline(context.Background(), BaselineRequest(s, &resolvedModel{Dir: model, ID: model}, r.Config, ""))
	if err != nil {
		t.Fatal(err)
	}
	tokens, _ := json.Marshal(r.Gates.HFBaseline.Tokens)
	script := `import sys, json, torch
from transformers import AutoModelForCausalLM
m = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.bfloat16, low_cpu_mem_usage=True).eval()
ids = torch.tensor([json.loads(sys.argv[2])])
with torch.no_grad():
    logits = m(ids).logits[0, -1].float().numpy()
sys.stdout.buffer.write(logits.tobytes())
`
	cmd := exec.Command(s.Python, "-c", script, model, string(tokens))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("plain transformers: %v\n%s", err, stderr.String())
	}
	if len(out) != 4*len(got) {
		t.Fatalf("plain run gave %d bytes, phase0 %d floats", len(out), len(got))
	}
	best, bestV := 0, float32(math.Inf(-1))
	for i := range got {
		want := math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:]))
		if math.Float32bits(want) != math.Float32bits(got[i]) {
			t.Fatalf("logit %d: phase0 %v, plain transformers %v", i, got[i], want)
		}
		if want > bestV {
			best, bestV = i, want
		}
	}
	if best != r.Gates.HFBaseline.Top1Token {
		t.Errorf("top-1 %d, plain transformers %d", r.Gates.HFBaseline.Top1Token, best)
	}
}

func TestMissingPythonIsAnError(t *testing.T) {
	s := settingsFor(t, "")
	s.Python = ""
	r := BaselineRun(context.Background(), s, tiny(t, "qwen3"), "test")
	if r.Status != verdict.Error || r.ErrorKind != report.ErrorPythonEnvironment || !strings.Contains(r.Error, "PHASE0_PYTHON") {
		t.Errorf("status %s, error %q", r.Status, r.Error)
	}
}

// A checkpoint that disagrees with its config fails natively; run still
// writes the workspace and the blockers, and never starts the reference.
func TestRunWithBrokenCheckpointRecordsBlockers(t *testing.T) {
	src := tiny(t, "qwen3")
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.Chmod(cfgPath, 0o644); err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(mustRead(t, cfgPath), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["num_key_value_heads"] = 4
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	llms := t.TempDir()
	r := RunBF16(context.Background(), settingsFor(t, llms), dir, "test")
	if r.Status != verdict.Fail || r.Gates.HFBaseline != nil || r.Gates.PyWeights != nil {
		t.Fatalf("status %s, baseline %+v, python weights %+v", r.Status, r.Gates.HFBaseline, r.Gates.PyWeights)
	}
	var fields []string
	for _, m := range r.Gates.ConfigConsistency.Mismatches {
		fields = append(fields, m.Field)
	}
	if strings.Join(fields, ",") != "n_kv_heads" {
		t.Errorf("consistency findings %v, want n_kv_heads", fields)
	}
	name := scaffold.DeriveName(dir)
	todo := string(mustRead(t, filepath.Join(llms, name, "TODO.md")))
	if !strings.Contains(todo, "needs-human-review: weights (native)") || !strings.Contains(todo, "needs-human-review: config consistency") || strings.Contains(todo, "- [x] 0:") {
		t.Errorf("TODO.md:\n%s", todo)
	}
}

// A prompt longer than max_seq is the user's setting, not the model's fault
// (issue 36 item 3): exit 2 naming both numbers, found by the tokenizer
// before the model loads; before, gate 2 FAILed (exit 1, which a fleet
// counts as a broken model) with a Python traceback on stderr.
func TestPromptLongerThanMaxSeqIsASettingError(t *testing.T) {
	for _, tc := range []struct {
		prompt string
		maxSeq int
		decode int
		want   string
	}{
		{strings.Repeat("word ", 300), 64, 0, "the prompt given has"},
		// the canonical prompt and decode: baseline.TestCheckPromptFits
	} {
		s := settingsFor(t, "")
		var progress bytes.Buffer
		s.Progress = &progress
		s.Prompt, s.MaxSeq, s.Decode = tc.prompt, tc.maxSeq, tc.decode
		r := BaselineRun(context.Background(), s, tiny(t, "qwen3"), "test")
		if r.Status != verdict.Error || ExitCode(r) != 2 || r.Gates.HFBaseline != nil ||
			!strings.Contains(r.Error, tc.want) || !strings.Contains(r.Error, fmt.Sprintf("max_seq is %d", tc.maxSeq)) {
			t.Errorf("max_seq %d: status %s, exit %d, baseline %v, error %q; want ERROR saying %q", tc.maxSeq, r.Status, ExitCode(r), r.Gates.HFBaseline != nil, r.Error, tc.want)
		}
		if log := progress.String(); strings.Contains(log, "Traceback") || strings.Contains(log, "loading the HF bf16 model") {
			t.Errorf("max_seq %d: the model was loaded or a traceback printed:\n%s", tc.maxSeq, log)
		}
	}
}

// A model folder whose name holds '"' runs with --name (issue 36 item 12:
// generate refused its model_id, whatever the name): the generated module
// names it, and the same run again reuses the PASS.
func TestRunOfAFolderNamedWithAQuote(t *testing.T) {
	dir := filepath.Join(t.TempDir(), `my"model`)
	if err := os.CopyFS(dir, os.DirFS(tiny(t, "qwen3"))); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	s := settingsFor(t, out)
	s.Name = "my_model"
	r := RunBF16(context.Background(), s, dir, "test")
	if r.Status != verdict.Pass {
		t.Fatalf("status %s, error %q, stages %+v", r.Status, r.Error, r.Stages)
	}
	module := filepath.Join(out, "my_model", "my_model_weights.py")
	if id, err := scaffold.ModelIDIn(module); err != nil || id != `my"model` {
		t.Errorf("MODEL_ID %q, %v", id, err)
	}
	s2 := settingsFor(t, out)
	s2.Name = "my_model"
	again := RunBF16(context.Background(), s2, dir, "test")
	if again.Status != verdict.Pass || again.ReusedFrom == nil {
		t.Errorf("second run: status %s, reused %v, error %q", again.Status, again.ReusedFrom != nil, again.Error)
	}
}
