package quantkey

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxLines bounds the package's non-test source: one quantized key's
// stages over its own state; what a stage judges is gate/quant's, what it
// reads of the folder gate/quantfolder's, the engine run/chain's and the
// shared stages run/orchestrator's (515 lines when the route moved out of the orchestrator).
const maxLines = 560

// TestPackageStaysOneRoute keeps quantkey the quantized route's stages.
func TestPackageStaysOneRoute(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(src, []byte("\n"))
	}
	if lines > maxLines {
		t.Errorf("quantkey has %d non-test lines, more than %d: move what is not a quantized key's stage into the package that owns it", lines, maxLines)
	}
}
