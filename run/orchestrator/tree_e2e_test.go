package orchestrator

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/internal/wslock"
	"phase0/output/report"
	"phase0/output/scaffold"
)

// holdLockEnv makes a child copy of the test binary hold a workspace lock
// (through the same wslock a run uses) until its stdin closes.
const holdLockEnv = "PHASE0_TEST_HOLD_LOCK"

func holdLock(path string) int {
	l, err := wslock.Acquire(path, wslock.Self(time.Now()))
	if err != nil {
		fmt.Println("error:", err)
		return 3
	}
	fmt.Println("held")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	l.Release()
	return 0
}

// upstreamTree lays out an mlir-air programming_examples/llms tree: the
// verify/ runner and prompts, the tree's own folders, and a hand-written
// model folder whose bytes phase0 never wrote.
func upstreamTree(t *testing.T) string {
	t.Helper()
	llms := t.TempDir()
	src := filepath.Join(testenv.PyShim(), "tests", "data", "llms", "verify")
	if err := os.CopyFS(filepath.Join(llms, "verify"), os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	for rel, content := range map[string]string{
		"shared/__init__.py":                               "",
		"bench/sweep_decode.py":                            "# upstream bench\n",
		"smolvla/smolvla_vision_weights.py":                "# upstream, not a <name>_weights.py workspace\n",
		"hf_models.txt":                                    "meta-llama/Llama-3.2-1B\n",
		"llama32_1b/llama32_1b_weights.py":                 "# upstream's hand-written Llama-3.2-1B loader\nMODEL_ID = \"meta-llama/Llama-3.2-1B\"\n",
		"llama32_1b/llama32_1b_cpu_helpers.py":             "# upstream helpers\n",
		"llama32_1b/README.md":                             "# llama32_1b (upstream)\n",
		"llama32_1b/docs/development_progress/progress.md": "# upstream progress\n",
	} {
		testenv.WriteFile(t, filepath.Join(llms, filepath.FromSlash(rel)), content)
	}
	return llms
}

// handWritten turns phase0's generated module into one a person wrote: a new
// header, an explicit name map, other blank lines — same behaviour, foreign bytes.
func handWritten(generated []byte) []byte {
	body := strings.ReplaceAll(string(generated), "\n\n\n", "\n\n")
	return []byte("# qwen3_0_6b weights, maintained by hand (not generated).\n# Layer tensors follow HF's names one to one.\n" + body +
		"\n\n# Explicit name map kept for the later phases.\nHAND_NAME_MAP = {\n    \"w_gate\": \"mlp.gate_proj.weight\",\n    \"w_up\": \"mlp.up_proj.weight\",\n}\n")
}

// swapGateUp reads w_gate from up_proj and w_up from gate_proj: shapes agree,
// values do not.
func swapGateUp(module []byte) []byte {
	s := strings.ReplaceAll(string(module), "gate_proj", "\x00")
	s = strings.ReplaceAll(s, "up_proj", "gate_proj")
	return []byte(strings.ReplaceAll(s, "\x00", "up_proj"))
}

// TestLivingInAnUpstreamTree: validate-existing PASSes a correct foreign
// module and FAILs one with gate/up swapped, never changing a foreign byte
// with or without --force; stale temporaries are swept; reserved names, a
// different model's module and a held lock are refused with exit 2.
func TestLivingInAnUpstreamTree(t *testing.T) {
	model := tiny(t, "qwen3")
	// phase0's own module for the model, generated outside the tree.
	scratch := t.TempDir()
	s := settingsFor(t, scratch)
	s.Name = "qwen3_0_6b"
	gen := RunBF16(context.Background(), s, model, "test")
	if gen.Workspace == nil || gen.Workspace.Mode != report.ModeGenerated || gen.Gates.PyWeights == nil || gen.Gates.PyWeights.Status != verdict.Pass {
		b, _ := gen.JSON()
		t.Fatalf("generating the reference module:\n%s", b)
	}
	generated := mustRead(t, filepath.Join(scratch, "qwen3_0_6b", "qwen3_0_6b_weights.py"))

	llms := upstreamTree(t)
	ws := filepath.Join(llms, "qwen3_0_6b")
	module := filepath.Join(ws, "qwen3_0_6b_weights.py")
	testenv.WriteFile(t, module, string(handWritten(generated)))
	testenv.WriteFile(t, filepath.Join(ws, "qwen3_0_6b_cpu_helpers.py"), "# upstream helpers\nimport numpy as np\n\n\ndef rms_norm(x, w, eps=1e-6):\n"+
		"    x = np.asarray(x, dtype=np.float32)\n    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * np.asarray(w, dtype=np.float32)\n")
	testenv.WriteFile(t, filepath.Join(ws, "README.md"), "# qwen3_0_6b (upstream)\n")
	testenv.WriteFile(t, filepath.Join(ws, "qwen3_0_6b_prefill.py"), "# upstream prefill\n")
	// A temporary of someone else's in a folder phase0 did not create is
	// not phase0's to sweep.
	testenv.WriteFile(t, filepath.Join(ws, ".README.md.tmp-123456"), "half")
	cache := t.TempDir()
	foreignSettings := func(t *testing.T) *Settings {
		s := settingsFor(t, llms)
		s.Name, s.CacheDir = "qwen3_0_6b", cache
		return s
	}
	sameTree := func(t *testing.T, before map[string]string) { t.Helper(); testenv.SameTreeAs(t, llms, before) }

	t.Run("validates a correct foreign module, --force or not, leaving the folder as it was", func(t *testing.T) {
		for _, force := range []bool{false, true} {
			before := testenv.SnapshotTree(t, llms)
			s := foreignSettings(t)
			s.Force = force
			r := RunBF16(context.Background(), s, model, "test")
			if r.Workspace == nil || r.Workspace.Mode != report.ModeValidatedExisting {
				b, _ := r.JSON()
				t.Fatalf("force=%v: not validated existing:\n%s", force, b)
			}
			if r.Gates.PyWeights.Status != verdict.Pass || r.Gates.ConfigConsistency.Status != verdict.Pass || r.Gates.Weights.Status != verdict.Pass {
				t.Errorf("force=%v: gates 1/3: native %s, python %s (%s), config %s", force, r.Gates.Weights.Status, r.Gates.PyWeights.Status, r.Gates.PyWeights.Summary, r.Gates.ConfigConsistency.Status)
			}
			if r.Gates.HFBaseline == nil || r.Gates.HFBaseline.Runner != "verify" {
				t.Errorf("force=%v: the tree's verify runner was not used: %+v", force, r.Gates.HFBaseline)
			}
			sameTree(t, before)
			if len(r.Workspace.Written) > 0 || !strings.HasPrefix(r.Workspace.RecordDir, filepath.Join(cache, "validated")) ||
				!strings.HasPrefix(r.Workspace.ReportJSON, r.Workspace.RecordDir) {
				t.Errorf("force=%v: written %v, record dir %q, report %q", force, r.Workspace.Written, r.Workspace.RecordDir, r.Workspace.ReportJSON)
			}
			if !strings.Contains(r.Text(), "validated existing qwen3_0_6b_weights.py") || !strings.Contains(r.Text(), r.Workspace.ReportMD) ||
				!strings.Contains(mustReadString(t, r.Workspace.ReportMD), "validated existing qwen3_0_6b_weights.py") {
				t.Errorf("force=%v: the text and Markdown reports do not say validated existing, or where the report is:\n%s", force, r.Text())
			}
		}
		// Unchanged: the verdict recorded outside the folder is reused.
		again := foreignSettings(t)
		again.Force = true // as the last run
		r := RunBF16(context.Background(), again, model, "test")
		if r.ReusedFrom == nil || r.Status != verdict.Pass {
			t.Errorf("the validated PASS was not reused: %s", stageDetail(r, "reuse"))
		}
	})

	t.Run("mid-deployment folder: Phase 0 entered and ticked, nothing else", func(t *testing.T) {
		todo := filepath.Join(ws, "TODO.md")
		progress := filepath.Join(ws, "docs", "development_progress", "progress.md")
		testenv.WriteFile(t, todo, "# Deployment: qwen3_0_6b\n\n## Phase status\n- [ ] 0: Build CPU Reference\n- [ ] 1: Kernel Validation\n\n## Active blockers\n")
		testenv.WriteFile(t, progress, "# Progress\n\nKept by hand.\n")
		before := testenv.SnapshotTree(t, llms)
		s := foreignSettings(t)
		s.Fresh = true
		r := RunBF16(context.Background(), s, model, "test")
		mustPass(t, r)
		testenv.UnchangedExcept(t, before, testenv.SnapshotTree(t, llms), todo, progress)
		for p := range testenv.SnapshotTree(t, llms) {
			if _, ok := before[p]; !ok {
				t.Errorf("new file in the tree: %s", p)
			}
		}
		if got := mustReadString(t, todo); !strings.Contains(got, "- [x] 0: Build CPU Reference") {
			t.Errorf("TODO.md not ticked:\n%s", got)
		}
		got := mustReadString(t, progress)
		if !strings.HasPrefix(got, "# Progress\n\nKept by hand.\n") || !strings.Contains(got, "validated existing `qwen3_0_6b_weights.py`") || strings.Contains(got, cache) {
			t.Errorf("progress.md:\n%s", got)
		}
		os.Remove(todo)
		os.RemoveAll(filepath.Join(ws, "docs"))
	})

	t.Run("fails a foreign module with gate and up swapped", func(t *testing.T) {
		testenv.WriteFile(t, module, string(swapGateUp(handWritten(generated))))
		before := testenv.SnapshotTree(t, llms)
		r := RunBF16(context.Background(), foreignSettings(t), model, "test")
		if r.Workspace == nil || r.Workspace.Mode != report.ModeValidatedExisting || r.Gates.PyWeights == nil || r.Gates.PyWeights.Status != verdict.Fail || ExitCode(r) != 1 {
			b, _ := r.JSON()
			t.Fatalf("swapped gate/up was not a gate-1 FAIL:\n%s", b)
		}
		if f := strings.Join(r.Gates.PyWeights.AllFindings(), "\n"); !strings.Contains(f, "w_gate") || !strings.Contains(f, "w_up") {
			t.Errorf("findings do not name w_gate and w_up:\n%s", f)
		}
		sameTree(t, before)
	})

	// Refusals before any Python gate: exit 2, the tree byte-identical.
	outside, err := foreignSettings(t).Places().Outside(ws)
	if err != nil {
		t.Fatal(err)
	}
	holder := filepath.Join(outside, scaffold.LockName)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), holdLockEnv+"="+holder)
	stdin, _ := child.StdinPipe()
	out, _ := child.StdoutPipe()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "held\n" {
		child.Process.Kill()
		t.Fatalf("lock holder: %q, %v", line, err)
	}
	defer func() { stdin.Close(); child.Wait() }()

	// A model folder whose name derives to a tree folder's.
	docsModel := filepath.Join(t.TempDir(), "docs")
	if err := os.Symlink(model, docsModel); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, wsName, model string
		want                []string
	}{
		{"lock held by another process", "qwen3_0_6b", model, []string{fmt.Sprintf("pid %d (", child.Process.Pid), holder, "locked by another phase0 run"}},
		{"name of the tree's verify folder", "verify", model, []string{"one of the llms tree's own folders", "--name"}},
		{"name of the tree's shared folder", "shared", model, []string{"one of the llms tree's own folders"}},
		{"existing folder that is not a workspace", "smolvla", model, []string{"is not a model workspace", "--name"}},
		{"another model's module", "llama32_1b", tiny(t, "llama-llama3"), []string{"name collision", `"meta-llama/Llama-3.2-1B"`, "--name"}},
		{"a derived name equal to a tree folder", "", docsModel, []string{`workspace name "docs"`, "--name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := testenv.SnapshotTree(t, llms)
			s := foreignSettings(t)
			s.Name = tc.wsName
			r := RunBF16(context.Background(), s, tc.model, "test")
			if r.Status != verdict.Error || ExitCode(r) != 2 {
				t.Fatalf("status %s, exit %d, error %q; want ERROR, 2", r.Status, ExitCode(r), r.Error)
			}
			if locked := r.ErrorKind == report.ErrorWorkspaceLocked; locked != (tc.name == "lock held by another process") {
				t.Errorf("error kind %q", r.ErrorKind)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Error, w) {
					t.Errorf("error %q does not say %q", r.Error, w)
				}
			}
			if !bytes.Equal([]byte(fmt.Sprint(before)), []byte(fmt.Sprint(testenv.SnapshotTree(t, llms)))) {
				testenv.UnchangedExcept(t, before, testenv.SnapshotTree(t, llms))
				t.Errorf("a refused run changed the tree")
			}
		})
	}
}

// TestOwnWorkspaceOfAnotherModel: phase0's own, unedited workspace of one
// model is not regenerated for another model given the same name.
func TestOwnWorkspaceOfAnotherModel(t *testing.T) {
	out := t.TempDir()
	s := settingsFor(t, out)
	s.Name = "shared_name"
	ws := filepath.Join(out, "shared_name")
	// Only the workspace matters here, but an interrupted run removes the
	// workspace it created: the first run ends with a verdict (no reference).
	s.ReferenceSteps = 0
	first := RunBF16(context.Background(), s, tiny(t, "qwen3"), "test")
	if first.Workspace == nil || first.Workspace.Mode != report.ModeGenerated {
		t.Fatalf("first run did not generate: %+v (%s)", first.Workspace, first.Error)
	}
	before := testenv.SnapshotTree(t, ws)
	s = settingsFor(t, out)
	s.Name = "shared_name"
	r := RunBF16(context.Background(), s, tiny(t, "llama-llama3"), "test")
	if r.Status != verdict.Error || ExitCode(r) != 2 || !strings.Contains(r.Error, "name collision") || !strings.Contains(r.Error, "--name") {
		t.Fatalf("status %s, exit %d, error %q", r.Status, ExitCode(r), r.Error)
	}
	testenv.UnchangedExcept(t, before, testenv.SnapshotTree(t, ws))
}

func mustReadString(t *testing.T, path string) string { return string(mustRead(t, path)) }
