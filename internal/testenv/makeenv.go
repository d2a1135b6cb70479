package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// The interpreters the tests use, by the environment variables make test
// sets. The Makefile alone knows where they live (their cache folders are
// keyed by hashes of the requirements files, the Python minor, the year):
// a variable that is unset is asked of make (print-test-env), never derived
// here a second time.
const (
	envPython      = "PHASE0_PYTHON"
	envTestPythons = "PHASE0_TEST_PYTHONS"
	envBlack       = "PHASE0_BLACK"
	envXSDPython   = "PHASE0_XSD_PYTHON"
)

// installedStamp is what the Makefile writes into a venv once pip finished.
const installedStamp = ".phase0-installed"

// makeEnv is make's answer, asked once per test binary.
var makeEnv = sync.OnceValues(askMake)

// askMake runs `make -s print-test-env` in the repository, in this
// process's environment, and parses its KEY=value lines.
func askMake() (map[string]string, error) {
	return printTestEnv(nil, nil)
}

// printTestEnv is askMake with the variables named in drop removed from the
// environment and those in set added.
func printTestEnv(drop map[string]bool, set []string) (map[string]string, error) {
	cmd := exec.Command("make", "-s", "--no-print-directory", "print-test-env")
	cmd.Dir = RepoRoot()
	// A go test started by make must not join that make's jobserver or
	// inherit its flags.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" && !drop[k] {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, set...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := bytes.TrimSpace(stderr.Bytes()); len(msg) > 0 {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return nil, fmt.Errorf("make -s print-test-env in %s: %w", cmd.Dir, err)
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			vars[k] = v
		}
	}
	for _, k := range []string{envPython, envTestPythons, envBlack} {
		if _, ok := vars[k]; !ok {
			return nil, fmt.Errorf("make -s print-test-env in %s printed no %s= line: %q", cmd.Dir, k, out)
		}
	}
	return vars, nil
}

// setting returns the variable's value from the environment, else make's
// (fromMake). An empty interpreter path counts as unset; an empty list of
// test pythons is a list (make test passes one when no other minor is
// installed). The error says why make could not answer.
func setting(name string) (value string, fromMake bool, err error) {
	if v, ok := os.LookupEnv(name); ok && (v != "" || name == envTestPythons) {
		return v, false, nil
	}
	vars, err := makeEnv()
	if err != nil {
		return "", true, fmt.Errorf("%s unset and make cannot name it: %w", name, err)
	}
	return vars[name], true, nil
}
