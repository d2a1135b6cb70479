package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// XSDPython returns the python of the venv holding xmlschema (an XSD
// validator): $PHASE0_XSD_PYTHON (make test sets it), else the one the
// Makefile names once `make xsd-venv` has installed it. It skips the test,
// saying why, when neither exists.
func XSDPython(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test runs an XSD validator (Python)")
	}
	py, fromMake, err := setting(envXSDPython)
	if err != nil {
		t.Skipf("%v: set %s or run the tests through make", err, envXSDPython)
	}
	if py == "" {
		t.Skipf("make names no %s: run `make xsd-venv`", envXSDPython)
	}
	if !fromMake {
		if _, err := os.Stat(py); err != nil {
			t.Fatalf("%s=%s: %v", envXSDPython, py, err)
		}
		return py
	}
	venv := filepath.Dir(filepath.Dir(py))
	if _, err := os.Stat(filepath.Join(venv, installedStamp)); err != nil {
		t.Skipf("%s unset and make's XSD venv %s is not installed (no %s): run `make xsd-venv` or `make test`", envXSDPython, venv, installedStamp)
	}
	return py
}

// ValidateXML checks each file against the XSD schema with a real
// validator (xmlschema, from XSDPython) and returns its complaints about
// each file, in order: "" for a valid one.
func ValidateXML(t testing.TB, xsd string, files ...string) []string {
	t.Helper()
	py := XSDPython(t)
	const script = `import sys, xmlschema
schema = xmlschema.XMLSchema(sys.argv[1])
for f in sys.argv[2:]:
    errors = [str(e.reason) for e in schema.iter_errors(f)]
    print(("; ".join(errors) or "ok").replace("\n", " "))
`
	out, err := exec.Command(py, append([]string{"-c", script, xsd}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("xmlschema: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(files) {
		t.Fatalf("xmlschema printed %d lines for %d files:\n%s", len(lines), len(files), out)
	}
	for i := range lines {
		if lines[i] == "ok" {
			lines[i] = ""
		}
	}
	return lines
}

// JUnitXSD is the JUnit schema phase0's --junit output is checked against.
func JUnitXSD() string {
	return filepath.Join(RepoRoot(), "output", "report", "junit", "testdata", "junit.xsd")
}
