package orchestrator

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phase0/gate/compare"
	"phase0/gate/reference"
	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/output/report"
	"phase0/output/scaffold"
	"phase0/read/safetensors"
	"phase0/run/reuse"
)

// testSteps keeps the torch-heavy tests short; the gate is the same at 32.
const testSteps = 6

// referenceSettings are settingsFor with a short reference and a progress log
// the test can read.
func referenceSettings(t *testing.T, llms string) (*Settings, *bytes.Buffer) {
	s := settingsFor(t, llms)
	var log bytes.Buffer
	s.Progress, s.ReferenceSteps = &log, testSteps
	return s, &log
}

// copyModel copies a tiny model folder so a test may change its bytes.
func copyModel(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// zeroTensors overwrites the named tensors' bytes with zeros in place.
func zeroTensors(t *testing.T, dir string, names ...string) {
	t.Helper()
	inv, err := safetensors.Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		tensor, ok := inv.Tensor(n)
		if !ok {
			t.Fatalf("%s has no tensor %s", dir, n)
		}
		f, err := os.OpenFile(filepath.Join(dir, tensor.File), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(make([]byte, tensor.Bytes()), tensor.Begin); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

func mustRecord(t *testing.T, r *report.Report) *report.Reference {
	t.Helper()
	if r.Status != verdict.Pass || r.Reference == nil || r.Reference.Status != verdict.Pass {
		b, _ := r.JSON()
		t.Fatalf("reference not recorded:\n%s", b)
	}
	return r.Reference
}

// The fp32 self-check: the same runner in float32 passes the gate against
// the bf16 reference, with near-1 cosines; a model with layer 0's attention
// and MLP outputs zeroed fails it, and the table shows the drop at layer 0.
func TestReferenceSelfCheckAndBrokenLayer(t *testing.T) {
	llms := t.TempDir()
	s, _ := referenceSettings(t, llms)
	model := tiny(t, "llama-llama3")
	ref := mustRecord(t, ReferenceRun(context.Background(), s, model, "test"))
	if ref.Dir != filepath.Join(llms, "llama_llama3", "reference") || ref.Reused || ref.Prompts != 5 || ref.Steps != testSteps || ref.Probes != 3 || ref.TorchThreads < 1 {
		t.Fatalf("reference %+v", ref)
	}
	referenceThenRun(t, s, model, ref)

	fp32 := *s
	fp32.ReferenceDtype, fp32.ReferenceOut = "float32", filepath.Join(t.TempDir(), "fp32")
	mustRecord(t, ReferenceRun(context.Background(), &fp32, model, "test"))
	start := time.Now()
	res := compare.Files(ref.Dir, fp32.ReferenceOut)
	t.Logf("compare bf16 vs fp32 took %v:\n%s", time.Since(start), res.Text())
	if res.Status != verdict.Pass || res.ExitCode() != 0 || len(res.Checks) != 5 || len(res.Layers) != 3 {
		t.Fatalf("bf16 vs fp32: %s", res.Text())
	}
	for _, l := range res.Layers {
		if l.Note != "" || l.CosMin < 0.99 {
			t.Errorf("bf16 vs fp32 %s layer %v: cosine min %v (%s), want >= 0.99", l.Name, l.Layer, l.CosMin, l.Note)
		}
	}

	broken := copyModel(t, model)
	zeroTensors(t, broken, "model.layers.0.self_attn.o_proj.weight", "model.layers.0.mlp.down_proj.weight")
	bad := *s
	bad.ReferenceOut = filepath.Join(t.TempDir(), "broken")
	mustRecord(t, ReferenceRun(context.Background(), &bad, broken, "test"))
	res = compare.Files(ref.Dir, bad.ReferenceOut)
	t.Logf("bf16 vs broken layer 0:\n%s", res.Text())
	if res.Status != verdict.Fail || res.ExitCode() != 1 {
		t.Fatalf("broken layer: status %s, want FAIL", res.Status)
	}
	refRec, _ := reference.Read(ref.Dir)
	badRec, _ := reference.Read(bad.ReferenceOut)
	for i, c := range res.Checks {
		// The gate stops at the first step the chosen tokens differ.
		first := -1
		for s := range refRec.Prompts[i].Chosen {
			if refRec.Prompts[i].Chosen[s] != badRec.Prompts[i].Chosen[s] {
				first = s
				break
			}
		}
		if first >= 0 && (c.Divergent == nil || *c.Divergent != first) {
			t.Errorf("prompt %d: divergence %v, want step %d", i, c.Divergent, first)
		}
	}
	if l := res.Layers[0]; l.Layer == nil || *l.Layer != 0 || l.CosMedian > 0.9 {
		t.Errorf("layer 0 row %+v: want the cosine drop there", l)
	}
}

// referenceThenRun is the flow docs/reference.md shows: `phase0 reference
// M`, then `phase0 run M`. The run takes the folder the reference made (its
// lock and reference/) as its own workspace, generates it, and reuses the
// recording (same inputs).
func referenceThenRun(t *testing.T, s *Settings, model string, first *report.Reference) {
	t.Helper()
	ws := filepath.Dir(first.Dir)
	entries, _ := os.ReadDir(ws)
	if len(entries) != 2 {
		t.Errorf("after phase0 reference, %s holds %v, want the lock and reference/", ws, entries)
	}
	r := RunBF16(context.Background(), s, model, "test")
	mustPass(t, r)
	ref := mustRecord(t, r)
	if !ref.Reused || ref.KeySHA256 != first.KeySHA256 || ref.Dir != first.Dir {
		t.Errorf("run after reference: reused %v (why %v), key %s vs %s, dir %s", ref.Reused, ref.Why, ref.KeySHA256, first.KeySHA256, ref.Dir)
	}
	if r.Workspace == nil || r.Workspace.Dir != ws || r.Workspace.RecordDir != "" || r.Workspace.Mode != report.ModeGenerated {
		t.Fatalf("workspace %+v, want %s generated as phase0's own", r.Workspace, ws)
	}
	if _, err := os.Stat(filepath.Join(ws, scaffold.ManifestName)); err != nil {
		t.Errorf("the run did not generate its workspace: %v", err)
	}
}

// A re-run reuses the recording without loading the model; changed model
// bytes record it anew; --refresh always does. What is on disk shows which:
// a recording is written to a new file and renamed over the old one.
func TestReferenceReusedAndRefreshed(t *testing.T) {
	llms := t.TempDir()
	real := copyModel(t, tiny(t, "qwen3"))
	// Run through a symlink to the folder (issue 36 item 2): every stage,
	// the reference's fingerprint and verdict reuse included, reads the folder.
	model := filepath.Join(t.TempDir(), "qwen3-link")
	if err := os.Symlink(real, model); err != nil {
		t.Fatal(err)
	}
	s, log := referenceSettings(t, llms)
	s.Name = "qwen3"
	first := RunBF16(context.Background(), s, model, "test")
	mustPass(t, first)
	rec := mustRecord(t, first)
	if rec.Reused || first.ModelDir != real {
		t.Fatalf("first run: reused %v, model dir %s (want %s); log:\n%s", rec.Reused, first.ModelDir, real, log)
	}
	if again := RunBF16(context.Background(), s, model, "test"); !strings.HasPrefix(stageDetail(again, "reuse"), "PASS") {
		t.Errorf("an unchanged re-run through the symlink was not reused: %s", stageDetail(again, "reuse"))
	}
	recorded := mustStat(t, filepath.Join(rec.Dir, "reference.safetensors"))
	sameRecording := func() bool {
		return os.SameFile(recorded, mustStat(t, filepath.Join(rec.Dir, "reference.safetensors")))
	}
	md := string(mustRead(t, filepath.Join(llms, "qwen3", "docs/development_progress/phase0/report.md")))
	if !strings.Contains(md, "## Reference (for the later phases)") || !strings.Contains(md, "phase0 compare "+rec.Dir) || !strings.Contains(md, "; torch threads: ") {
		t.Errorf("report.md lacks the reference section:\n%s", md)
	}
	progress := string(mustRead(t, filepath.Join(llms, "qwen3", "docs/development_progress/progress.md")))
	if !strings.Contains(progress, "- Reference for the later phases: `reference/` (5 prompts × 6 steps") || strings.Contains(progress, rec.Dir) {
		t.Errorf("progress.md lacks the reference line, or names its absolute path:\n%s", progress)
	}

	log.Reset()
	again := mustRecord(t, ReferenceRun(context.Background(), s, model, "test"))
	t.Logf("re-run log:\n%s", log)
	if !again.Reused || again.KeySHA256 != rec.KeySHA256 || !sameRecording() || !strings.Contains(log.String(), "reused "+rec.Dir) {
		t.Fatalf("re-run did not reuse the recording: %+v", again)
	}

	zeroTensors(t, real, "model.layers.1.mlp.down_proj.weight")
	log.Reset()
	changed := mustRecord(t, ReferenceRun(context.Background(), s, model, "test"))
	if changed.Reused || changed.KeySHA256 == rec.KeySHA256 || !strings.Contains(strings.Join(changed.Why, " "), "model files") || sameRecording() {
		t.Fatalf("changed model bytes: reused %v, why %v", changed.Reused, changed.Why)
	}

	refresh := *s
	refresh.Refresh = true
	recorded = mustStat(t, filepath.Join(rec.Dir, "reference.safetensors"))
	forced := mustRecord(t, ReferenceRun(context.Background(), &refresh, model, "test"))
	if forced.Reused || !forced.Refreshed || forced.KeySHA256 != changed.KeySHA256 || sameRecording() {
		t.Fatalf("--refresh: %+v", forced)
	}
}

// With an mlir-air tree, the recording goes through its verify/ HfRunner and
// its prompt file.
func TestReferenceThroughVerifyTree(t *testing.T) {
	llms := t.TempDir()
	testenv.CopyTestData(t, filepath.Join(llms, "verify"), "llms/verify")
	s, _ := referenceSettings(t, llms)
	s.ReferenceSteps = 2
	ref := mustRecord(t, ReferenceRun(context.Background(), s, tiny(t, "qwen2"), "test"))
	rec, err := reference.Read(ref.Dir)
	if err != nil {
		t.Fatal(err)
	}
	m := rec.Meta
	if !strings.HasPrefix(m.Runner, "verify HfRunner") || m.PromptsFile != filepath.Join(llms, "verify", "prompts", "base.txt") ||
		len(m.Prompts) != 2 || !strings.HasPrefix(m.Prompts[0], "The quick brown fox") || m.Key == nil || !strings.Contains(m.Key.Runner, filepath.Join(llms, "verify")) {
		t.Errorf("meta %+v", m)
	}
	if res := compare.Files(ref.Dir, ref.Dir); res.Status != verdict.Pass {
		t.Errorf("a recording against itself: %s", res.Text())
	}
}

// TestReferenceFailureInRun: a runner whose decode_step raises cannot record
// the reference. The Phase 0 gates stand (PASS, with a warning), the section
// says ERROR naming the runner's error, and the verdict is not recorded for
// reuse, so the next run tries the recording again.
func TestReferenceFailureInRun(t *testing.T) {
	llms := t.TempDir()
	src := filepath.Join(testenv.PyShim(), "tests", "data", "llms", "verify")
	if err := os.CopyFS(filepath.Join(llms, "verify"), os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	runner := filepath.Join(llms, "verify", "runners", "hf_runner.py")
	if err := os.Chmod(runner, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(runner, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(`

def _broken_decode_step(self, input_token, current_pos):
    raise RuntimeError("decode_step broke on purpose")


HfRunner.decode_step = _broken_decode_step
`)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := referenceSettings(t, llms)
	r := RunBF16(context.Background(), s, tiny(t, "llama-llama3"), "test")
	if r.Status != verdict.Pass || r.Gates.HFBaseline == nil || r.Gates.HFBaseline.Status != verdict.Pass {
		b, _ := r.JSON()
		t.Fatalf("a failed recording must leave the Phase 0 gates standing:\n%s", b)
	}
	if r.Reference == nil || r.Reference.Status != verdict.Error || !strings.Contains(r.Reference.Summary, "broke on purpose") {
		t.Errorf("reference section %+v, want ERROR naming the runner's error", r.Reference)
	}
	warned := false
	for _, w := range r.Warnings {
		warned = warned || strings.Contains(w, "reference not recorded")
	}
	if !warned {
		t.Errorf("warnings %q do not say the reference was not recorded", r.Warnings)
	}
	if got := stageDetail(r, "record_inputs"); !strings.Contains(got, "the reference was not recorded") {
		t.Errorf("record_inputs %q, want the verdict kept from reuse", got)
	}
	if r.Workspace == nil {
		t.Fatal("no workspace in the report")
	}
	inputs := filepath.Join(r.Workspace.Dir, "docs", "development_progress", "phase0", reuse.FileName)
	if _, err := os.Stat(inputs); !os.IsNotExist(err) {
		t.Errorf("%s exists (%v): the next run would reuse a verdict without a reference", inputs, err)
	}
}

func mustStat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}
