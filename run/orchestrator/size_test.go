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

// maxLines bounds the package's non-test source: the stage engine and the
// stages live here; list runs (run/listrun), reuse (run/reuse), the record
// (output/record), starting Python (python/launch), warm sessions
// (python/warm), the workspace's decisions (run/wsfolder) and every
// rendering (output/report) have packages of their own. 2,600 since the
// quantized key's chain gained its reuse stage and two deployed families'
// hooks (2,482 lines before them; python/launch, reuse.StampQuant and
// quant.FamilyMismatch moved out meanwhile).
const maxLines = 2600

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
