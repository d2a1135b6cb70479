// Package testenv gives Go tests the real Python environment and tiny models
// written by transformers itself, built once and cached between test runs.
package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"phase0/read/model"
)

// Python returns the venv python: $PHASE0_PYTHON (make test sets it), else
// the one the Makefile names (make's print-test-env) once `make venv` has
// finished installing it. It skips the test, saying why, when neither exists.
func Python(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test runs Python")
	}
	py, fromMake, err := setting(envPython)
	if err != nil {
		t.Skipf("%v: set %s or run the tests through make", err, envPython)
	}
	if !fromMake {
		if _, err := os.Stat(py); err != nil {
			t.Fatalf("%s=%s: %v", envPython, py, err)
		}
		return py
	}
	venv := filepath.Dir(filepath.Dir(py))
	if _, err := os.Stat(filepath.Join(venv, installedStamp)); err != nil {
		t.Skipf("%s unset and make's venv %s is not installed (no %s): run `make venv` or `make test`", envPython, venv, installedStamp)
	}
	return py
}

// Pythons returns Python(t) followed by every interpreter in
// $PHASE0_TEST_PYTHONS (a PATH-style list; make test sets it to small venvs
// of other Python minors; unset, the ones make has installed), without
// duplicates. When make cannot name them (no make, as in check-py314's
// chroot), Python(t) is the only one.
func Pythons(t testing.TB) []string {
	t.Helper()
	pys := []string{Python(t)}
	list, fromMake, err := setting(envTestPythons)
	if err != nil {
		t.Logf("only %s: %v", pys[0], err)
		return pys
	}
	for _, py := range filepath.SplitList(list) {
		if py == "" || slices.Contains(pys, py) {
			continue
		}
		if _, err := os.Stat(py); err != nil {
			t.Fatalf("%s names %s: %v (from make: %t)", envTestPythons, py, err, fromMake)
		}
		pys = append(pys, py)
	}
	return pys
}

// RepoRoot is the module root: the nearest folder above the working
// directory (a test's is its package's) whose go.mod declares module
// phase0. Not this file's path: make builds with -trimpath, so that clean
// clones share the build cache, and that path is then "phase0/…".
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(fmt.Sprintf("testenv: the working directory: %v", err))
	}
	for d := dir; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(data), "module phase0\n") {
			return d
		}
		if filepath.Dir(d) == d {
			panic(fmt.Sprintf("testenv: no go.mod of module phase0 above %s", dir))
		}
	}
}

// PyShim is the working copy of the phase0_shim package's parent folder.
func PyShim() string { return filepath.Join(RepoRoot(), "python", "pyshim") }

// CopyTestData copies the folder pyshim/tests/data/REL (slash-separated)
// into to: the tests' upstream-style trees are assembled from it.
func CopyTestData(t testing.TB, to, rel string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(filepath.Join(PyShim(), "tests", "data", filepath.FromSlash(rel)))); err != nil {
		t.Fatalf("copying test data %s: %v", rel, err)
	}
}

// Model describes one tiny test checkpoint.
type Model struct {
	Name   string // folder name in the cache, e.g. "llama-llama3"
	Family string
	Args   string // extra keyword arguments to make_tiny_model, as Python source
}

// Models are the tiny checkpoints the end-to-end tests use. They are trained
// briefly on English text (phase0_testmodels/training.py), so they pass gate
// 2's perplexity rule like a real model; llama-nan then has a NaN planted.
var Models = []Model{
	{"llama-llama3", "llama", `rope_scaling="llama3"`},
	{"mistral", "mistral", ``},
	{"qwen2", "qwen2", `tied=True`},
	{"qwen3", "qwen3", ``},
	{"qwen2-sharded", "qwen2", `sharded=True`},
	{"llama-nan", "llama", `nan_in="model.norm.weight"`},
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// TinyModels builds every Model once per content of the model generator and
// returns the folder holding them (one sub-folder per Model.Name).
func TinyModels(t testing.TB) string {
	t.Helper()
	py := Python(t)
	buildOnce.Do(func() { buildDir, buildErr = build(py, "testmodels", Models) })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildDir
}

// RandomSigmas are the init standard deviations of RandomModels.
var RandomSigmas = []string{"0.02", "0.1", "0.3", "1.0"}

// RandomModels returns untrained models ("<family>-sigma<σ>", one per family
// and RandomSigmas entry) on the tokenizer and vocabulary of the model in
// tokenizerFrom: what gate 2's perplexity rule must fail. Built once per
// generator content and tokenizer folder, cached like TinyModels.
func RandomModels(t testing.TB, tokenizerFrom string) string {
	t.Helper()
	var models []Model
	for _, family := range model.FamilyNames() {
		for _, sigma := range RandomSigmas {
			models = append(models, Model{family + "-sigma" + sigma, family, fmt.Sprintf("trained=False, init_std=%s, tokenizer_from=%q", sigma, tokenizerFrom)})
		}
	}
	dir, err := build(Python(t), "randommodels", models)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func build(py, prefix string, models []Model) (string, error) {
	var specs []string
	for _, m := range models {
		specs = append(specs, m.Name+"|"+m.Family+"|"+m.Args)
	}
	sort.Strings(specs)
	return cachedBuild(py, prefix, testModels, strings.Join(specs, "\n"), func(tmp string) string {
		var script strings.Builder
		script.WriteString("from phase0_testmodels import make_tiny_model\n")
		for _, m := range models {
			args := ""
			if m.Args != "" {
				args = ", " + m.Args
			}
			fmt.Fprintf(&script, "make_tiny_model(%q, %q%s)\n", m.Family, filepath.Join(tmp, m.Name), args)
		}
		return script.String()
	})
}

// generator is a pyshim package that writes checkpoints: its code and data
// files key the cache, so any edit rebuilds what it wrote.
type generator struct {
	pkg  string // folder under pyshim
	data string // its data files, a glob relative to pkg
}

var (
	testModels   = generator{"phase0_testmodels", filepath.Join("data", "*.txt")}
	shapedModels = generator{"phase0_benchmodels", filepath.Join("data", "*.json")}
)

// ShapedModel returns a checkpoint with the architecture of a real model
// (pyshim/phase0_benchmodels/data/<preset>.json) and random bf16 weights,
// for benchmarks at the sizes users deploy. It is built once per content of
// the generator and kept in <cache>/models/<preset>-random-<hash>/<preset>;
// a build for a newer generator removes the older ones (gigabytes each).
func ShapedModel(py, preset string) (string, error) {
	prefix := filepath.Join("models", preset+"-random")
	dir, err := cachedBuild(py, prefix, shapedModels, preset, func(tmp string) string {
		return fmt.Sprintf("from phase0_benchmodels import make_shaped_model\nmake_shaped_model(%q, %q)\n", preset, filepath.Join(tmp, preset))
	})
	if err != nil {
		return "", err
	}
	stale, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), preset+"-random-*"))
	for _, old := range stale {
		if old != dir {
			os.RemoveAll(old)
		}
	}
	return filepath.Join(dir, preset), nil
}

// versionsScript prints torch.__version__ and transformers.__version__
// without importing either (importing torch costs seconds of CPU, in every
// test binary that asks for models): torch's version lives in its generated
// version.py, which imports nothing of torch; transformers' is its
// distribution's. The output is what the two attributes give.
const versionsScript = `import importlib.util
from importlib.metadata import version
from pathlib import Path
torch = importlib.util.find_spec("torch")
if torch is None or not torch.submodule_search_locations:
    raise SystemExit("torch is not installed")
spec = importlib.util.spec_from_file_location("_phase0_torch_version", Path(torch.submodule_search_locations[0]) / "version.py")
assert spec is not None and spec.loader is not None
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(module.__version__, version("transformers"))`

// cachedBuild returns <cache>/<prefix>-<hash>, running the Python script
// (which writes into the folder it is given) when that folder is not
// complete yet. The hash covers the generator's files, spec and the torch and
// transformers versions.
func cachedBuild(py, prefix string, gen generator, spec string, script func(tmp string) string) (string, error) {
	h := sha256.New()
	// Every file of the generator (code, tokenizer corpus, training text,
	// configs) shapes the models: any edit rebuilds them.
	code, _ := filepath.Glob(filepath.Join(PyShim(), gen.pkg, "*.py"))
	data, _ := filepath.Glob(filepath.Join(PyShim(), gen.pkg, gen.data))
	files := append(code, data...)
	sort.Strings(files)
	for _, f := range files {
		h.Write([]byte(f[len(PyShim()):] + "\x00"))
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	h.Write([]byte(spec))
	versions, err := exec.Command(py, "-c", versionsScript).Output()
	if err != nil {
		return "", fmt.Errorf("torch and transformers versions from %s: %w", py, err)
	}
	h.Write(versions)

	cache, err := cacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, prefix+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
		return dir, nil
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(prefix)+"-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command(py, "-c", script(tmp))
	cmd.Dir = PyShim()
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s models with %s: %w\n%s", filepath.Base(prefix), gen.pkg, err, b)
	}
	if err := os.WriteFile(filepath.Join(tmp, "complete"), nil, 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "complete")); statErr == nil {
			return dir, nil
		}
		return "", err
	}
	return dir, nil
}

// quantFixtures is the quantized gate's fixture builder: the packers of
// phase0_testmodels/quant (and the tokenizer of phase0_testmodels), driven
// by pyshim/tests/quant_gate_fixtures.py.
var quantFixtures = generator{filepath.Join("phase0_testmodels", "quant"), filepath.Join("..", "*.py")}

// QuantFixtures returns the quantized gate's fixtures, built once per
// content of their builder and cached like TinyModels: ref/ and other/
// (256-wide tiny Llama checkpoints written by transformers), and
// bundles/<case>/model.q4nx (the clean Q4NX bundle of ref in both header
// codecs, one negative per failure class, another model's bundle), packed
// by our own packer. The upstream-style tree is not part of it: tests copy
// pyshim/tests/data/quant themselves.
func QuantFixtures(t testing.TB) string {
	t.Helper()
	py := Python(t)
	script := filepath.Join(PyShim(), "tests", "quant_gate_fixtures.py")
	spec, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := cachedBuild(py, "quantfixtures", quantFixtures, string(spec), func(tmp string) string {
		return fmt.Sprintf("import runpy, sys\nsys.argv = [%q, %q]\nrunpy.run_path(%q, run_name=\"__main__\")\n", script, tmp, script)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// QuantFamilyFixtures returns the deployed families' quantized fixtures
// (pyshim/tests/quant_family_fixtures.py), built once per content of their
// builder and cached like QuantFixtures: gemma3/ and phi3/ (tiny
// transformers-written references of gemma3_4b_q4nx and phi4_mini_q4nx)
// and bundles/<family>/<case>/model.q4nx (each clean bundle and one per
// convention mistake or split order), packed by our own packers.
func QuantFamilyFixtures(t testing.TB) string {
	t.Helper()
	py := Python(t)
	script := filepath.Join(PyShim(), "tests", "quant_family_fixtures.py")
	spec, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := cachedBuild(py, "quantfamilies", quantFixtures, string(spec), func(tmp string) string {
		return fmt.Sprintf("import runpy, sys\nsys.argv = [%q, %q]\nrunpy.run_path(%q, run_name=\"__main__\")\n", script, tmp, script)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// cacheDir is phase0's cache folder ($PHASE0_CACHE, else the user cache
// dir's phase0/), where the tests keep what they build once.
func cacheDir() (string, error) {
	if cache := os.Getenv("PHASE0_CACHE"); cache != "" {
		return cache, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "phase0"), nil
}

// CacheDir is phase0's cache folder, created if missing; the test fails
// without one.
func CacheDir(t testing.TB) string {
	t.Helper()
	dir, err := cacheDir()
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		t.Fatalf("no cache folder for the tests: %v", err)
	}
	return dir
}
