package tensornames

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated Python vocabulary")

// The worker's vocabulary is this package's, byte for byte.
func TestPythonVocabularyIsGenerated(t *testing.T) {
	path := filepath.Join("..", "..", "python", "pyshim", "phase0_shim", "quant", "vocab.py")
	want := pythonFile()
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
		t.Errorf("%s differs from read/tensornames: run go test ./read/tensornames -run Python -update", path)
	}
}

func TestPartnersArePairsOfProjections(t *testing.T) {
	for a, b := range Partners {
		if !IsProjection(a) || !IsProjection(b) {
			t.Errorf("partners %s/%s: both must be projections", a, b)
		}
		if Partners[b] != a {
			t.Errorf("partners: %s -> %s but %s -> %s", a, b, b, Partners[b])
		}
	}
}
