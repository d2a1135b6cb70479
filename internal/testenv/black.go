package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// Black returns the black executable: $PHASE0_BLACK (make test sets it),
// else the one the Makefile names once `make black-venv` has finished
// installing it. It skips the test, saying why, when neither exists.
func Black(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test runs black (Python)")
	}
	black, fromMake, err := setting(envBlack)
	if err != nil {
		t.Skipf("%v: set %s or run the tests through make", err, envBlack)
	}
	if !fromMake {
		if _, err := os.Stat(black); err != nil {
			t.Fatalf("%s=%s: %v", envBlack, black, err)
		}
		return black
	}
	venv := filepath.Dir(filepath.Dir(black))
	if _, err := os.Stat(filepath.Join(venv, installedStamp)); err != nil {
		t.Skipf("%s unset and make's black venv %s is not installed (no %s): run `make black-venv` or `make test`", envBlack, venv, installedStamp)
	}
	return black
}
