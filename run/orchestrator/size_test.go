package orchestrator

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// maxLines bounds the package's non-test source: the bf16 run's stages
// and the state they share; the engine (run/chain), a quantized key's
// route (run/quantkey), the dispatch between them (run/modelrun), list
// runs (run/listrun), reuse (run/reuse), the record (output/record),
// starting Python (python/launch), warm sessions (python/warm), the
// workspace's decisions (run/wsfolder) and every rendering (output/report)
// have packages of their own. 2,200 since the quantized route and the
// engine moved out (2,598 before).
const maxLines = 2200

// TestPackageStaysTheStageEngine keeps orchestrator from growing back into
// the god package: at most maxLines non-test lines, and no text/tabwriter
// (tables are report's).
func TestPackageStaysTheStageEngine(t *testing.T) {
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
		parsed, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == "text/tabwriter" {
				t.Errorf("%s imports text/tabwriter: tables are rendered in report/", f)
			}
		}
	}
	if lines > maxLines {
		t.Errorf("orchestrator has %d non-test lines, more than %d: move what is not the stage engine or a stage into a package of its own", lines, maxLines)
	}
}
