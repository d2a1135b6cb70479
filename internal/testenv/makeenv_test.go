package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// unset removes name from the environment for the rest of the test.
func unset(t *testing.T, name string) {
	t.Setenv(name, "") // restores the old value at the end of the test
	os.Unsetenv(name)
}

// TestPythonWithoutEnvironment: run without make test's variables, Python
// finds make's venv, and it is a finished one that imports torch's peers.
func TestPythonWithoutEnvironment(t *testing.T) {
	unset(t, envPython)
	py := Python(t)
	out, err := exec.Command(py, "-c", "import sys, numpy; print(sys.prefix)").Output()
	if err != nil {
		t.Fatalf("%s: %v", py, err)
	}
	prefix := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(prefix, installedStamp)); err != nil {
		t.Errorf("%s runs in %s, which make did not finish: %v", py, prefix, err)
	}
}

// TestEnvironmentWins: a variable that is set is used as given, make is not
// consulted for it.
func TestEnvironmentWins(t *testing.T) {
	unset(t, envPython)
	py := Python(t)
	link := filepath.Join(t.TempDir(), "python")
	if err := os.Symlink(py, link); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envPython, link)
	t.Setenv(envTestPythons, "")
	if got := Pythons(t); len(got) != 1 || got[0] != link {
		t.Errorf("Pythons = %q, want only %s", got, link)
	}
}

// TestPythonsWithoutEnvironment: the other minors make installed are found
// without PHASE0_TEST_PYTHONS, each a different interpreter that runs.
func TestPythonsWithoutEnvironment(t *testing.T) {
	unset(t, envPython)
	unset(t, envTestPythons)
	for _, py := range Pythons(t) {
		if out, err := exec.Command(py, "-c", "import numpy").CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", py, err, out)
		}
	}
}

// TestBlackWithoutEnvironment: black from make's venv, and it runs.
func TestBlackWithoutEnvironment(t *testing.T) {
	unset(t, envBlack)
	black := Black(t)
	out, err := exec.Command(black, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "black") {
		t.Errorf("%s --version: %v\n%s", black, err, out)
	}
}

// TestMakeCacheIsTheBinarysCache: make puts its venvs where phase0 and these
// tests keep their caches ($PHASE0_CACHE, else $XDG_CACHE_HOME/phase0, else
// ~/.cache/phase0), so a user who moved the cache off a small home does not
// get torch there anyway.
func TestMakeCacheIsTheBinarysCache(t *testing.T) {
	home := os.Getenv("HOME")
	for _, tc := range []struct{ phase0Cache, xdg, want string }{
		{"", "", home + "/.cache/phase0/"},
		{"", "/data/cache", "/data/cache/phase0/"},
		{"/scratch/p0", "/data/cache", "/scratch/p0/"},
	} {
		cmd := exec.Command("make", "-s", "--no-print-directory", "print-test-env")
		cmd.Dir = RepoRoot()
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "MAKE") && k != "MFLAGS" && k != "PHASE0_CACHE" && k != "XDG_CACHE_HOME" && k != "CACHE_DIR" {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		if tc.phase0Cache != "" {
			cmd.Env = append(cmd.Env, "PHASE0_CACHE="+tc.phase0Cache)
		}
		if tc.xdg != "" {
			cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+tc.xdg)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("make print-test-env: %v", err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if k, v, _ := strings.Cut(line, "="); k == envPython && !strings.HasPrefix(v, tc.want) {
				t.Errorf("PHASE0_CACHE=%q XDG_CACHE_HOME=%q: make's venv is %s, want it under %s", tc.phase0Cache, tc.xdg, v, tc.want)
			}
		}
	}
}
