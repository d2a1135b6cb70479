package fingerprint

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"phase0/internal/testenv"
	"phase0/wire"
)

// TestCPUFlagsAreAChange: a verdict recorded on one CPU is not reused on a
// CPU that lacks, or adds, any flag that picks torch's kernels, nor on
// another vendor's.
func TestCPUFlagsAreAChange(t *testing.T) {
	here := ReadCPU()
	if _, err := os.Stat(cpuinfoPath); err == nil && len(here.Flags) == 0 {
		t.Fatalf("%s names none of %v", cpuinfoPath, KernelFlags)
	}
	base := Sources{Modules: map[string]string{}, Env: Env(), CPU: here}
	if why := SourcesChange(base, base.Restamp()); why != "" {
		t.Fatalf("unchanged: %q", why)
	}
	for _, flag := range KernelFlags {
		old := base
		if slices.Contains(here.Flags, flag) {
			old.CPU = CPU{Vendor: here.Vendor, CPUs: here.CPUs, Flags: slices.DeleteFunc(slices.Clone(here.Flags), func(f string) bool { return f == flag })}
		} else {
			old.CPU = CPU{Vendor: here.Vendor, CPUs: here.CPUs, Flags: append(slices.Clone(here.Flags), flag)}
		}
		if why := SourcesChange(old, base.Restamp()); !strings.Contains(why, " "+flag+" ") {
			t.Errorf("recorded with %v, now %v: change %q, want %s named", old.CPU.Flags, here.Flags, why, flag)
		}
	}
	old := base
	old.CPU.CPUs = here.CPUs + 1
	if why := SourcesChange(old, base.Restamp()); !strings.Contains(why, "CPUs") {
		t.Errorf("CPU count: %q", why)
	}
	old = base
	old.CPU.Vendor = "AuthenticAMD-or-other"
	if why := SourcesChange(old, base.Restamp()); !strings.Contains(why, "vendor") {
		t.Errorf("vendor: %q", why)
	}
	// The parser keeps only kernel flags, of the first processor.
	c := ParseCPU("processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse4_2 avx2 avx512f avx512_bf16 amx_tile amx_bf16 ht\n\nprocessor\t: 1\nflags\t: fpu\n")
	if c.Vendor != "GenuineIntel" || strings.Join(c.Flags, " ") != "amx_bf16 amx_tile avx2 avx512_bf16 avx512f sse4_2" {
		t.Errorf("parsed %+v", c)
	}
}

// TestListingCountsEveryImportableForm: a package or module in any form
// Python imports (not only __init__.py / .py) changes a sys.path folder's
// listing, and so does a namespace folder of a name the run imported; a
// folder of data (a model folder in an llms tree) does not.
func TestListingCountsEveryImportableForm(t *testing.T) {
	names := []string{"runners", "mylib"}
	for _, form := range []string{
		"runners/__init__.py", "runners/__init__.pyc", "runners/__init__.so", "runners/__init__.abi3.so",
		"runners/__init__.cpython-313-x86_64-linux-gnu.so", "runners/", "runners.py", "runners.pyc",
		"runners.abi3.so", "runners.cpython-312-x86_64-linux-gnu.so", "runners.so", "other/__init__.pyc", "x.pth",
	} {
		t.Run(form, func(t *testing.T) {
			dir := t.TempDir()
			testenv.WriteFile(t, filepath.Join(dir, "mylib.py"), "")
			testenv.WriteFile(t, filepath.Join(dir, "qwen3_0_6b", "qwen3_0_6b_weights.py"), "")
			before := Listing(dir, names)
			if strings.HasSuffix(form, "/") {
				if err := os.MkdirAll(filepath.Join(dir, form), 0o755); err != nil {
					t.Fatal(err)
				}
			} else {
				testenv.WriteFile(t, filepath.Join(dir, form), "")
			}
			if after := Listing(dir, names); after == before {
				t.Errorf("%s added: listing unchanged", form)
			}
		})
	}
	dir := t.TempDir()
	before := Listing(dir, names)
	for _, data := range []string{"qwen3_0_6b/", "llama32_1b/TODO.md", "notes.txt", "weights-v2/__init__.py", "runners.py.orig"} {
		if strings.HasSuffix(data, "/") {
			os.MkdirAll(filepath.Join(dir, data), 0o755)
		} else {
			testenv.WriteFile(t, filepath.Join(dir, data), "")
		}
	}
	if after := Listing(dir, names); after != before {
		t.Errorf("data folders and files changed the listing")
	}
}

// TestImportDirsSeeShadowingPackage: real Python imports a module from an
// installed-style package; a package folder of the same name dropped beside
// the module makes Python import the package instead, and the recorded
// stamp sees it without starting Python, naming both files.
func TestImportDirsSeeShadowingPackage(t *testing.T) {
	py := testenv.Python(t)
	site := t.TempDir()
	qwen3 := filepath.Join(site, "mypkg", "models", "qwen3")
	testenv.WriteFile(t, filepath.Join(site, "mypkg", "__init__.py"), "")
	testenv.WriteFile(t, filepath.Join(site, "mypkg", "models", "__init__.py"), "")
	testenv.WriteFile(t, filepath.Join(qwen3, "__init__.py"), "")
	testenv.WriteFile(t, filepath.Join(qwen3, "modeling_qwen3.py"), "WHO = 'module'\n")
	facts := func() (wire.Imports, string) {
		t.Helper()
		script := "import json, sys\nsys.path.insert(0, sys.argv[1])\nimport mypkg.models.qwen3.modeling_qwen3 as m\n" +
			"from phase0_shim.sources import imports\nprint(json.dumps({'imports': imports(), 'who': m.WHO}))\n"
		cmd := exec.Command(py, "-c", script, site)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+testenv.PyShim())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("python: %v", err)
		}
		var got struct {
			Imports wire.Imports `json:"imports"`
			Who     string       `json:"who"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		return got.Imports, got.Who
	}
	im, who := facts()
	if who != "module" {
		t.Fatalf("imported %q", who)
	}
	s := StampSources(im)
	if s.Modules["mypkg.models.qwen3.modeling_qwen3"] != filepath.Join(qwen3, "modeling_qwen3.py") {
		t.Fatalf("import map %v", s.Modules)
	}
	if !slices.ContainsFunc(s.Dirs, func(f File) bool { return f.Name == qwen3 }) {
		t.Fatalf("folders %v lack %s", s.Dirs, qwen3)
	}
	if why := SourcesChange(s, s.Restamp()); why != "" {
		t.Fatalf("unchanged: %q", why)
	}
	// The shadow: the module's own file is untouched.
	testenv.WriteFile(t, filepath.Join(qwen3, "modeling_qwen3", "__init__.py"), "WHO = 'package'\n")
	why := SourcesChange(s, s.Restamp())
	for _, want := range []string{"import folder " + qwen3 + " changed", "mypkg.models.qwen3.modeling_qwen3 would now import the package " + filepath.Join(qwen3, "modeling_qwen3")} {
		if !strings.Contains(why, want) {
			t.Errorf("change %q, want %q", why, want)
		}
	}
	// Python agrees: the package wins now.
	if _, who := facts(); who != "package" {
		t.Errorf("real Python imported %q after the shadow", who)
	}
}
