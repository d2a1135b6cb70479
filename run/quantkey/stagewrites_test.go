package quantkey

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"phase0/internal/testenv"
)

// TestStagesWriteOnlyTheirResults holds the key's state rule (state.go):
// a stage function returns its result and the stage table (stages.go)
// keeps it, so only stages.go assigns to a key's facts or sections, or
// hands the run's own state what a stage learned (KeepWorkspace,
// KeepReuse); nothing assigns to its core or its inputs. It reads the
// package's source.
func TestStagesWriteOnlyTheirResults(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]string{"facts": "stages.go", "sections": "stages.go"}
	fset := token.NewFileSet()
	writes, keeps := 0, 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range testenv.Writes(f, "keyState") {
			writes++
			if allowed[w.Field] != name {
				t.Errorf("%s: assigns to the key's %s (%s): only %s may", fset.Position(w.Pos), w.Field, w.Expr, orNobody(allowed[w.Field]))
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "Keep") {
				keeps++
				if name != "stages.go" {
					t.Errorf("%s: %s hands the run's state a result: only stages.go may", fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
	// The check itself must see the writes it allows.
	if writes < 5 || keeps < 2 {
		t.Errorf("found %d writes through *keyState variables and %d Keep calls; the check no longer sees them", writes, keeps)
	}
}

func orNobody(s string) string {
	if s == "" {
		return "nobody"
	}
	return s
}
