package wire

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"phase0/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the generated Python contract")

// The worker's TypedDicts are this package's structs, byte for byte.
func TestPythonContractIsGenerated(t *testing.T) {
	path := filepath.Join("..", PythonPath)
	want, err := PythonFile(".")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s differs from package wire: run go test ./wire -run Python -update", path)
	}
}

// The generated file is black-clean with black's defaults.
func TestPythonContractIsBlackClean(t *testing.T) {
	black := testenv.Black(t)
	src, err := PythonFile(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg, file := filepath.Join(dir, "black.toml"), filepath.Join(dir, "optypes.py")
	if err := os.WriteFile(cfg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, black, "--diff", "--check", "--quiet", "--config", cfg, file).CombinedOutput(); err != nil {
		t.Fatalf("black --check: %v: the generated optypes.py is not black-clean:\n%s", err, out)
	}
}
