package orchestrator

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/output/report"
)

// mirrorPackage replaces site/<pkg> (a link into the shared venv, made by
// cloneVenv) by a tree of real folders whose files link to the shared
// venv's: Python imports the same files, but a test can add an entry to a
// folder of the package without touching the shared venv.
func mirrorPackage(t *testing.T, site, pkg string) string {
	t.Helper()
	link := filepath.Join(site, pkg)
	from, err := filepath.EvalSymlinks(link)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		to := filepath.Join(link, rel)
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return filepath.SkipDir // Python writes the mirror's own
			}
			return os.MkdirAll(to, 0o755)
		}
		return os.Symlink(path, to)
	})
	if err != nil {
		t.Fatal(err)
	}
	return link
}

// TestReuseSeesIssue31 walks issue 31's four ways to a wrong reused PASS
// through real runs: a real worker in a venv clone imports a real
// transformers tree, a real llms tree, the built-in shim unpacked into the
// test's cache. Each manipulation must stop reuse (naming it) or, for a
// second `runners`, stop the run (exit 2, both paths named); each is
// undone or left so that the next check names the newest change.
// Not parallel: it sets environment variables, which only a new worker sees.
func TestReuseSeesIssue31(t *testing.T) {
	llms := t.TempDir()
	testenv.CopyTestData(t, filepath.Join(llms, "verify"), "llms/verify")
	s := settingsFor(t, llms)
	s.Sessions = nil         // every run starts its own worker: the environment, the shim and the imports are this run's
	s.PyShimDir = ""         // the shim built into the test binary, unpacked into ...
	s.CacheDir = t.TempDir() // ... this cache
	s.ReferenceSteps = 0     // the verdict is what is reused here
	py, site := cloneVenv(t, s.Python)
	s.Python = py
	transformers := mirrorPackage(t, site, "transformers")
	modelDir := copyDir(t, tiny(t, "llama-llama3"))

	run := func(t *testing.T) *report.Report {
		t.Helper()
		return RunBF16(context.Background(), s, modelDir, "test")
	}
	reused := func(t *testing.T) {
		t.Helper()
		r := run(t)
		mustPass(t, r)
		if r.ReusedFrom == nil {
			t.Fatalf("an unchanged re-run was not reused: %s", stageDetail(r, "reuse"))
		}
	}
	refused := func(t *testing.T, want ...string) {
		t.Helper()
		refusedFor(t, s, modelDir, want...)
	}

	r := run(t)
	mustPass(t, r)
	if r.ReusedFrom != nil {
		t.Fatal("the first run was reused")
	}
	reused(t)

	t.Run("1 oneDNN's environment", func(t *testing.T) {
		for _, name := range []string{"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ONEDNN_DEFAULT_FPMATH_MODE", "KMP_AFFINITY", "GOMP_SPINCOUNT", "OPENBLAS_CORETYPE", "TOKENIZERS_PARALLELISM"} {
			// The machine may set one of them (OPENBLAS_CORETYPE=Haswell):
			// the change is undone to what the recorded runs saw.
			before, had := os.LookupEnv(name)
			t.Setenv(name, "AVX2-"+before)
			refused(t, "environment variable "+name+" changed")
			if had {
				os.Setenv(name, before)
			} else {
				os.Unsetenv(name)
			}
		}
		reused(t)
	})

	t.Run("3 a second runners at the tree's root", func(t *testing.T) {
		shadow := filepath.Join(llms, "runners")
		want := filepath.Join(llms, "verify", "runners", "hf_runner.py")
		for _, form := range []string{"runners/__init__.pyc", "runners/__init__.cpython-313-x86_64-linux-gnu.so", "runners/__init__.abi3.so", "runners/__init__.py", "runners.pyc", "runners.abi3.so"} {
			testenv.WriteFile(t, filepath.Join(llms, form), "")
			testenv.WriteFile(t, filepath.Join(shadow, "hf_runner.py"), "class HfRunner:\n    name = 'shadow'\n")
			r := run(t)
			if r.Status != verdict.Error || r.ReusedFrom != nil {
				t.Errorf("%s: status %s (reused %v), want ERROR (exit 2)", form, r.Status, r.ReusedFrom != nil)
			}
			got := stageDetail(r, "llms_dir")
			found := filepath.Join(llms, strings.SplitN(form, "/", 2)[0])
			if !strings.Contains(got, found) || !strings.Contains(got, want) {
				t.Errorf("%s: llms_dir %q, want both %s and %s named", form, got, found, want)
			}
			if err := os.RemoveAll(shadow); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(llms, form))
		}
		// A namespace folder at the root does not stand in for verify's
		// regular package (Python's rule: the run may go on), but it is a
		// new importable name the run imported: not reused.
		testenv.WriteFile(t, filepath.Join(shadow, "notes.txt"), "")
		refused(t, "import folder "+llms+" changed")
		os.RemoveAll(shadow)
		reused(t)
	})

	t.Run("2 a package shadowing a module inside transformers", func(t *testing.T) {
		llama := filepath.Join(transformers, "models", "llama")
		// RMSNorm returning zeros: constant logits, a FAIL when it runs.
		testenv.WriteFile(t, filepath.Join(llama, "modeling_llama", "__init__.py"), `import importlib.util, pathlib, sys
_file = pathlib.Path(__file__).parent.parent / "modeling_llama.py"
_spec = importlib.util.spec_from_file_location("transformers.models.llama._modeling_llama", _file)
_real = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _real
_spec.loader.exec_module(_real)
globals().update({k: v for k, v in vars(_real).items() if not k.startswith("__")})
LlamaRMSNorm.forward = lambda self, x: x * 0
`)
		refused(t, "import folder "+llama+" changed",
			"transformers.models.llama.modeling_llama would now import the package "+filepath.Join(llama, "modeling_llama"))
		// The premise: run afresh (into another workspace, so the PASS above
		// stays recorded), the shadow is what Python imports, and the verdict flips.
		name, fresh := s.Name, s.Fresh
		s.Name, s.Fresh = "shadowed", true
		r := run(t)
		s.Name, s.Fresh = name, fresh
		if r.Status == verdict.Pass {
			t.Errorf("with RMSNorm zeroed by the shadow package the fresh verdict is PASS: the shadow was not imported")
		}
		if err := os.RemoveAll(filepath.Join(llama, "modeling_llama")); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("4 the unpacked shim's prompts edited", func(t *testing.T) {
		prompts, _ := filepath.Glob(filepath.Join(s.CacheDir, "pyshim-*", "phase0_shim", "prompts", "base.txt"))
		if len(prompts) != 1 {
			t.Fatalf("unpacked prompts %v, want one", prompts)
		}
		orig, err := os.ReadFile(prompts[0])
		if err != nil {
			t.Fatal(err)
		}
		rewriteInPlace(t, prompts[0], func(b []byte) []byte {
			i := strings.Index(string(b), "France")
			if i < 0 {
				t.Fatalf("base.txt %q", b)
			}
			copy(b[i:], "FRANCE")
			return b
		})
		refused(t, "phase0_shim/prompts/base.txt differs from the built-in copy")
		if got, _ := os.ReadFile(prompts[0]); string(got) != string(orig) {
			t.Errorf("the edited base.txt was not replaced by the built-in copy: %q", got)
		}
	})
}
