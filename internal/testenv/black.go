package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// Black returns the black executable: $PHASE0_BLACK (make test sets it),
// else the newest finished ~/.cache/phase0/venv-black-*/ that `make
// black-venv` made. It skips the test, saying why, when neither exists.
func Black(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test runs black (Python)")
	}
	if black := os.Getenv("PHASE0_BLACK"); black != "" {
		if _, err := os.Stat(black); err != nil {
			t.Fatalf("PHASE0_BLACK=%s: %v", black, err)
		}
		return black
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skipf("PHASE0_BLACK unset and no home directory: %v", err)
	}
	pattern := filepath.Join(home, ".cache", "phase0", "venv-black-*", ".phase0-installed")
	stamps, _ := filepath.Glob(pattern)
	var newest string
	var newestTime int64
	for _, s := range stamps {
		if fi, err := os.Stat(s); err == nil && fi.ModTime().UnixNano() > newestTime {
			newest, newestTime = s, fi.ModTime().UnixNano()
		}
	}
	if newest == "" {
		t.Skipf("PHASE0_BLACK unset and no finished venv matches %s: run `make black-venv` or `make test`", pattern)
	}
	return filepath.Join(filepath.Dir(newest), "bin", "black")
}
