package testenv

import (
	"go/ast"
	"go/token"
	"strings"
)

// A Write is an assignment through a variable of the checked type.
type Write struct {
	Pos   token.Pos
	Field string // the state's own field written: "facts", "err", …
	Expr  string
}

// Writes lists the assignments in f whose left side is a selector rooted
// at a variable (a parameter or receiver) declared as *typeName: the
// stage-write guards of run/orchestrator and run/quantkey.
func Writes(f *ast.File, typeName string) []Write {
	var out []Write
	check := func(vars map[string]bool, lhs ast.Expr) {
		path := selectorPath(lhs)
		if len(path) >= 2 && vars[path[0]] {
			out = append(out, Write{Pos: lhs.Pos(), Field: path[1], Expr: strings.Join(path, ".")})
		}
	}
	var visit func(n ast.Node, vars map[string]bool)
	visit = func(n ast.Node, vars map[string]bool) {
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				visit(n.Body, with(vars, n.Type.Params, typeName))
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
		vars := with(nil, fd.Type.Params, typeName)
		if fd.Recv != nil {
			vars = with(vars, fd.Recv, typeName)
		}
		visit(fd.Body, vars)
	}
	return out
}

// with adds the names of fields declared as *typeName to vars (a copy).
func with(vars map[string]bool, fields *ast.FieldList, typeName string) map[string]bool {
	out := map[string]bool{}
	for k, v := range vars {
		out[k] = v
	}
	for _, f := range fields.List {
		if star, ok := f.Type.(*ast.StarExpr); ok {
			if id, ok := star.X.(*ast.Ident); ok && id.Name == typeName {
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
