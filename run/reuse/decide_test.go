package reuse

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/read/fingerprint"
)

// TestStampPython reads the environment without running it: an installed,
// removed or upgraded distribution is a change, named.
func TestStampPython(t *testing.T) {
	prefix := t.TempDir()
	site := filepath.Join(prefix, "lib", "python3.13", "site-packages")
	for _, d := range []string{filepath.Join(prefix, "bin"), filepath.Join(site, "torch-2.5.1+cpu.dist-info"), filepath.Join(site, "transformers-4.57.0.dist-info")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	py := filepath.Join(prefix, "bin", "python")
	if err := os.WriteFile(py, []byte("not run"), 0o755); err != nil {
		t.Fatal(err)
	}
	before, err := fingerprint.StampInterpreter(py)
	if err != nil {
		t.Fatal(err)
	}
	if before.Torch != "2.5.1+cpu" || before.Transformers != "4.57.0" {
		t.Errorf("versions %q %q", before.Torch, before.Transformers)
	}
	if err := os.Rename(filepath.Join(site, "transformers-4.57.0.dist-info"), filepath.Join(site, "transformers-4.58.0.dist-info")); err != nil {
		t.Fatal(err)
	}
	after, err := fingerprint.StampInterpreter(py)
	if err != nil {
		t.Fatal(err)
	}
	if got := fieldChange("python environment", before, after); !strings.Contains(got, "transformers-4.58.0.dist-info was installed") {
		t.Errorf("change = %q", got)
	}
	if err := os.RemoveAll(filepath.Join(site, "torch-2.5.1+cpu.dist-info")); err != nil {
		t.Fatal(err)
	}
	if _, err := fingerprint.StampInterpreter(py); err == nil || !strings.Contains(err.Error(), "torch or transformers not found") {
		t.Errorf("an environment without torch: %v", err)
	}
}
