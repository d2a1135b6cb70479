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
	drop := map[string]bool{"PHASE0_CACHE": true, "XDG_CACHE_HOME": true, "CACHE_DIR": true}
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{nil, home + "/.cache/phase0/"},
		{[]string{"XDG_CACHE_HOME=/data/cache"}, "/data/cache/phase0/"},
		{[]string{"PHASE0_CACHE=/scratch/p0", "XDG_CACHE_HOME=/data/cache"}, "/scratch/p0/"},
	} {
		vars, err := printTestEnv(drop, tc.set)
		if err != nil {
			t.Fatal(err)
		}
		if venv := vars[envPython]; !strings.HasPrefix(venv, tc.want) {
			t.Errorf("%q: make's venv is %s, want it under %s", tc.set, venv, tc.want)
		}
	}
}
