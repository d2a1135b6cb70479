package fingerprint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"phase0/internal/atomicfile"
	"phase0/internal/testenv"
)

// scannedPackages are the distributions a Phase 0 run executes (the
// worker's imports; NumPy and ml_dtypes through the loaders).
var scannedPackages = []string{"torch", "transformers", "tokenizers", "safetensors", "huggingface_hub", "numpy", "ml_dtypes", "hf_xet"}

// libraryFamilies are the prefixes under which the native libraries those
// packages bundle read their environment (oneDNN builds its names as
// "ONEDNN_"/"DNNL_" + a suffix at run time, so only the family is in the
// binary). Each family found in a binary must be decided by a rule as a
// whole.
var libraryFamilies = []string{
	"ONEDNN", "DNNL", "MKL", "KMP", "GOMP", "OMP", "OPENBLAS", "GOTO", "FBGEMM", "XNNPACK", "NNPACK",
	"CPUINFO", "ATEN", "TORCH", "PYTORCH", "KINETO", "GLOG", "TOKENIZERS", "RAYON", "RUST", "TOKIO", "NPY", "NUMPY", "SAFETENSORS",
}

// gpuLibrary names the shared libraries of a CUDA build that a CPU run
// never loads for its computation (CUDA_* is watched as a whole anyway).
var gpuLibrary = regexp.MustCompile(`cuda|cudnn|cublas|cusparse|cufft|curand|cusolver|nccl|nvrtc|nvshmem|nvjitlink|cupti|triton`)

// pyEnvRead finds the names Python code reads from the environment by a
// literal: os.environ.get("X"), os.getenv("X"), os.environ["X"],
// os.environ.setdefault/pop("X"), helpers named *get*env*("X"), and
// "X" in os.environ.
var pyEnvRead = regexp.MustCompile(`(?:getenv|environ\.get|environ\.setdefault|environ\.pop|environ\[|get_?\w*env\w*|env_?\w*bool\w*)\(?\s*["']([A-Z_][A-Za-z0-9_]*)["']|["']([A-Z_][A-Za-z0-9_]*)["']\s+(?:not\s+)?in\s+os\.environ`)

// sitePackages asks the test Python for its purelib folder.
func sitePackages(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(testenv.Python(t), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// envNamesRead scans the installed packages: the names their Python reads,
// and the library families (with one name each, for the message) their
// shared libraries mention. The scan reads some 2 GB of libraries (13 s);
// its result is kept in phase0's cache under a key made of every scanned
// file's stamp (Files: size, times, inode, device) and of the patterns, so
// any change to an installed file, or to what the scan looks for, scans
// again.
func envNamesRead(t *testing.T, site string) (pyNames map[string]string, families map[string]string) {
	t.Helper()
	var roots []string
	for _, pkg := range scannedPackages {
		if _, err := os.Stat(filepath.Join(site, pkg)); err == nil {
			roots = append(roots, filepath.Join(site, pkg))
		}
	}
	libs, _ := filepath.Glob(filepath.Join(site, "*.libs")) // auditwheel's bundled libraries (numpy.libs: OpenBLAS)
	roots = append(roots, libs...)
	if len(roots) < 5 {
		t.Fatalf("only %v of %v installed in %s", roots, scannedPackages, site)
	}
	var files []string
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			name := d.Name()
			if strings.HasSuffix(name, ".py") || strings.Contains(name, ".so") && !gpuLibrary.MatchString(name) {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	patterns := fmt.Sprintf("%s\x00%s\x00%q", pyEnvRead, gpuLibrary, libraryFamilies)
	key := Digest(append(Files(files, func(string) int64 { return -1 }), File{Name: patterns}))
	cached := filepath.Join(testenv.CacheDir(t), "envscan-"+key[:16]+".json")
	var scan struct{ Python, Families map[string]string }
	if b, err := os.ReadFile(cached); err == nil && json.Unmarshal(b, &scan) == nil && scan.Python != nil && scan.Families != nil {
		return scan.Python, scan.Families
	}
	scan.Python, scan.Families = scanFiles(t, files)
	if b, err := json.Marshal(scan); err == nil {
		if err := atomicfile.Write(cached, b); err != nil {
			t.Logf("the scan is not cached: %v", err)
		}
	}
	return scan.Python, scan.Families
}

// scanFiles reads each file: the names a Python file reads, the library
// families a shared library mentions.
func scanFiles(t *testing.T, files []string) (pyNames map[string]string, families map[string]string) {
	t.Helper()
	pyNames, families = map[string]string{}, map[string]string{}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(path, ".py") {
			if !bytes.Contains(data, []byte("environ")) && !bytes.Contains(data, []byte("getenv")) && !bytes.Contains(data, []byte("env")) {
				continue
			}
			for _, m := range pyEnvRead.FindAllSubmatch(data, -1) {
				for _, g := range m[1:] {
					if len(g) > 0 {
						pyNames[string(g)] = path
					}
				}
			}
			continue
		}
		for _, fam := range libraryFamilies {
			if _, seen := families[fam]; seen {
				continue
			}
			if i := bytes.Index(data, []byte(fam+"_")); i >= 0 {
				end := i + len(fam) + 1
				for end < len(data) && end-i < 64 && (data[end] == '_' || data[end] >= 'A' && data[end] <= 'Z' || data[end] >= '0' && data[end] <= '9') {
					end++
				}
				families[fam] = string(data[i:end]) + " in " + path
			}
		}
	}
	return pyNames, families
}

// TestEnvRulesCoverWhatPackagesRead derives the watched environment from
// the installed packages themselves: every variable their Python reads by
// name, and every family of variables their shared libraries read, is
// decided by EnvRules (watched, or irrelevant with a reason). A new torch
// or transformers that reads a new variable fails here until it is decided.
// Then each watched name, set, is a change that stops reuse.
func TestEnvRulesCoverWhatPackagesRead(t *testing.T) {
	site := sitePackages(t)
	pyNames, families := envNamesRead(t, site)
	// The scan must see what issue 31 found unwatched, or it proves nothing.
	for _, want := range []string{"ONEDNN", "DNNL", "GOMP", "MKL", "OPENBLAS", "TOKENIZERS"} {
		if _, ok := families[want]; !ok {
			t.Errorf("the scan found no %s_ in the shared libraries of %s", want, site)
		}
	}
	for _, want := range []string{"HF_HUB_OFFLINE", "ATEN_CPU_CAPABILITY", "XDG_CACHE_HOME", "TRANSFORMERS_VERBOSITY", "NPY_DISABLE_CPU_FEATURES"} {
		if _, ok := pyNames[want]; !ok {
			t.Errorf("the scan found no read of %s in the Python of %s", want, site)
		}
	}
	for _, name := range slices.Sorted(mapsKeys(pyNames)) {
		if _, ok := EnvRuleFor(name); !ok {
			t.Errorf("%s reads %s: add it to EnvRules, watched or irrelevant with the reason", pyNames[name], name)
		}
	}
	for _, fam := range slices.Sorted(mapsKeys(families)) {
		r, ok := EnvRuleFor(fam + "_")
		if !ok || len(r.Prefix) > len(fam)+1 {
			t.Errorf("a shared library reads the %s_ family (%s): add a rule for the whole family to EnvRules", fam, families[fam])
		}
	}
	t.Logf("%d names read by Python, %d library families", len(pyNames), len(families))

	// Each watched name (every one the scan found, and ONEDNN_MAX_CPU_ISA,
	// which oneDNN composes at run time) is a change when set.
	base := Sources{Modules: map[string]string{}, Env: Env(), CPU: ReadCPU()}
	watched := []string{"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ONEDNN_DEFAULT_FPMATH_MODE", "KMP_AFFINITY", "GOMP_SPINCOUNT", "OPENBLAS_CORETYPE", "MKL_ENABLE_INSTRUCTIONS"}
	for name := range pyNames {
		if EnvWatched(name) {
			watched = append(watched, name)
		}
	}
	slices.Sort(watched)
	for _, name := range slices.Compact(watched) {
		old, had := os.LookupEnv(name)
		os.Setenv(name, "phase0-probe")
		why := SourcesChange(base, base.Restamp())
		if had {
			os.Setenv(name, old)
		} else {
			os.Unsetenv(name)
		}
		if !strings.Contains(why, "environment variable "+name+" ") {
			t.Errorf("%s set: change %q, want it named", name, why)
		}
	}
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestEnvRulesAreDecided: every rule says why; no prefix is listed twice.
func TestEnvRulesAreDecided(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range EnvRules {
		if r.Why == "" || r.Prefix == "" {
			t.Errorf("rule %+v: a prefix and a reason", r)
		}
		if seen[r.Prefix] {
			t.Errorf("prefix %s listed twice", r.Prefix)
		}
		seen[r.Prefix] = true
	}
	for name, want := range map[string]bool{"ONEDNN_MAX_CPU_ISA": true, "DNNL_MAX_CPU_ISA": true, "TORCHINDUCTOR_X": true, "PATH": false, "WANDB_MODE": false, "HOME": false, "TOKENIZERS_PARALLELISM": true, "XDG_SESSION_ID": false, "XDG_CACHE_HOME": true, "_": false} {
		if got := EnvWatched(name); got != want {
			t.Errorf("EnvWatched(%s) = %t, want %t", name, got, want)
		}
	}
}
