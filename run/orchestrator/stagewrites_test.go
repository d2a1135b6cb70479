package orchestrator

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"phase0/internal/testenv"
)

// TestStagesWriteOnlyTheirResults holds the state's rule (state.go): a
// stage function returns its result and the stage table (stages.go) keeps
// it, so only stages.go assigns to a state's facts or sections, and only
// the engine (state.go) to its bookkeeping. Nothing assigns to its inputs.
// It reads the package's source: any assignment through a *state variable
// (a parameter or receiver) is checked against the file it is in.
func TestStagesWriteOnlyTheirResults(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]string{"facts": "stages.go", "sections": "stages.go", "client": "state.go", "locks": "state.go", "created": "state.go",
		"warnings": "state.go", "stages": "state.go", "err": "state.go", "key": "state.go"}
	fset := token.NewFileSet()
	writes := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range testenv.Writes(f, "state") {
			writes++
			if allowed[w.Field] != name {
				t.Errorf("%s: assigns to the state's %s (%s): only %s may", fset.Position(w.Pos), w.Field, w.Expr, orNobody(allowed[w.Field]))
			}
		}
	}
	// The check itself must see the writes it allows.
	if writes < 10 {
		t.Errorf("found %d writes through *state variables; the check no longer sees them", writes)
	}
}

func orNobody(s string) string {
	if s == "" {
		return "nobody"
	}
	return s
}
