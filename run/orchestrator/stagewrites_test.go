package orchestrator

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
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
		"warnings": "state.go", "stages": "state.go", "err": "state.go"}
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
		for _, w := range stateWrites(f) {
			writes++
			if allowed[w.field] != name {
				t.Errorf("%s: assigns to the state's %s (%s): only %s may", fset.Position(w.pos), w.field, w.expr, orNobody(allowed[w.field]))
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

type stateWrite struct {
	pos   token.Pos
	field string // the state's own field written: "facts", "err", …
	expr  string
}

// stateWrites lists the assignments in f whose left side is a selector
// rooted at a variable declared as *state.
func stateWrites(f *ast.File) []stateWrite {
	var out []stateWrite
	check := func(vars map[string]bool, lhs ast.Expr) {
		path := selectorPath(lhs)
		if len(path) >= 2 && vars[path[0]] {
			out = append(out, stateWrite{pos: lhs.Pos(), field: path[1], expr: strings.Join(path, ".")})
		}
	}
	var visit func(n ast.Node, vars map[string]bool)
	visit = func(n ast.Node, vars map[string]bool) {
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				visit(n.Body, with(vars, n.Type.Params))
				return false
			case *ast.AssignStmt:
				for _, l := range n.Lhs {
					check(vars, l)
				}
			case *ast.IncDecStmt:
				check(vars, n.X)
			}
			return true
		})
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok { // package-level values: the stage table's function literals
			visit(d, nil)
			continue
		}
		if fd.Body == nil {
			continue
		}
		vars := with(nil, fd.Type.Params)
		if fd.Recv != nil {
			vars = with(vars, fd.Recv)
		}
		visit(fd.Body, vars)
	}
	return out
}

// with adds the names of fields declared as *state to vars (a copy).
func with(vars map[string]bool, fields *ast.FieldList) map[string]bool {
	out := map[string]bool{}
	for k, v := range vars {
		out[k] = v
	}
	for _, f := range fields.List {
		if star, ok := f.Type.(*ast.StarExpr); ok {
			if id, ok := star.X.(*ast.Ident); ok && id.Name == "state" {
				for _, n := range f.Names {
					out[n.Name] = true
				}
			}
		}
	}
	return out
}

// selectorPath is x.a.b as [x a b] (index and star expressions are looked
// through: st.locks[0].x is [st locks x]); nil for anything else.
func selectorPath(e ast.Expr) []string {
	switch e := e.(type) {
	case *ast.Ident:
		return []string{e.Name}
	case *ast.SelectorExpr:
		if p := selectorPath(e.X); p != nil {
			return append(p, e.Sel.Name)
		}
	case *ast.IndexExpr:
		return selectorPath(e.X)
	case *ast.StarExpr:
		return selectorPath(e.X)
	case *ast.ParenExpr:
		return selectorPath(e.X)
	}
	return nil
}
