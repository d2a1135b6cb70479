package testenv

import (
	"os"
	"path/filepath"
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
