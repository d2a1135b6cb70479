package wire

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// PythonPath is where the worker's copy of the contract lives, from the
// repository's root.
const PythonPath = "python/pyshim/phase0_shim/optypes.py"

// PythonFile renders optypes.py: every struct the ops carry (Ops, to every
// depth) as a TypedDict of the same name, its doc comments as the class's
// docstring and its keys' comments, in the order the ops introduce them.
// dir holds this package's Go source, whose comments it reads. NoArgs and
// NoResult are phase0_shim.opargs' own. The file is generated, never
// edited by hand: go test ./wire -run Python -update rewrites it, and the
// test fails when it differs.
func PythonFile(dir string) (string, error) {
	docs, err := readDocs(dir)
	if err != nil {
		return "", err
	}
	r := &renderer{docs: docs, done: map[reflect.Type]bool{
		reflect.TypeFor[NoArgs](): true, reflect.TypeFor[NoResult](): true,
	}}
	for _, op := range Ops {
		r.op = op.Name
		for _, t := range []reflect.Type{op.Args, op.Result} {
			if err := r.class(t); err != nil {
				return "", fmt.Errorf("op %s: %w", op.Name, err)
			}
		}
	}
	return pythonHeader + r.b.String(), nil
}

const pythonHeader = `"""The arguments and results of every op Go calls, as ` + "``TypedDict``" + ` classes.

Generated from Go's package wire (wire/*.go) by
` + "``go test ./wire -run Python -update``" + `; do not edit. Each class is the
Go struct of the same name. Optional keys (` + "``omitempty``" + ` in Go) are
declared in a ` + "``total=False``" + ` class over a base holding the required ones
(` + "``NotRequired``" + ` needs Python 3.11); a key whose type allows None may
carry null. Open-ended facts (a config's fields, transformers' attributes)
are ` + "``dict[str, Any]``" + `; Go still decodes them strictly.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict
`

// docs are the comments of this package's types, by type name and by
// "Type.Field".
type docs map[string]string

func readDocs(dir string) (docs, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	out := docs{}
	fset := token.NewFileSet()
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading the contract's comments: %w", err)
		}
		f, err := parser.ParseFile(fset, p, src, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("reading the contract's comments: %w", err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(g.Specs) == 1 {
					doc = g.Doc
				}
				out[ts.Name.Name] = doc.Text()
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fld := range st.Fields.List {
					text := fld.Doc.Text() + fld.Comment.Text()
					for _, n := range fld.Names {
						out[ts.Name.Name+"."+n.Name] = text
					}
				}
			}
		}
	}
	return out, nil
}

type renderer struct {
	docs docs
	done map[reflect.Type]bool
	op   string // the op whose classes are being rendered
	told string // the op whose section header was written last
	b    strings.Builder
}

// class renders t (a struct, or what a pointer, slice or map holds) after
// the classes it inherits from, then the classes its keys hold.
func (r *renderer) class(t reflect.Type) error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		if t == rawMessage {
			return nil
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() != wirePath || r.done[t] {
		return nil
	}
	r.done[t] = true
	for _, e := range Embedded(t) {
		if err := r.class(e); err != nil {
			return err
		}
	}
	if err := r.write(t); err != nil {
		return err
	}
	for _, f := range OwnFields(t) {
		if err := r.class(f.Type); err != nil {
			return err
		}
	}
	return nil
}

var (
	rawMessage = reflect.TypeFor[json.RawMessage]()
	wirePath   = reflect.TypeFor[Op]().PkgPath()
)

// pythonKeywords are the keys a class body cannot declare (a TypedDict
// holding one is written in the functional form).
var pythonKeywords = map[string]bool{"class": true, "def": true, "from": true, "import": true, "in": true, "is": true, "global": true, "lambda": true, "return": true}

func (r *renderer) write(t reflect.Type) error {
	if r.told != r.op {
		// Two blank lines after a class, one after the imports.
		if r.told != "" {
			r.b.WriteString("\n")
		}
		r.told = r.op
		fmt.Fprintf(&r.b, "\n# --- %s %s\n", r.op, strings.Repeat("-", max(3, 69-len(r.op))))
	}
	own := OwnFields(t)
	var required, optional []Field
	functional := false
	for _, f := range own {
		if f.Optional {
			optional = append(optional, f)
		} else {
			required = append(required, f)
		}
		functional = functional || pythonKeywords[f.Name]
	}
	var bases []string
	for _, e := range Embedded(t) {
		bases = append(bases, e.Name())
	}
	if functional {
		if len(optional) > 0 || len(bases) > 0 {
			return fmt.Errorf("%s: a key named by a Python keyword needs the functional TypedDict form, which takes neither optional keys nor a base", t.Name())
		}
		return r.functional(t, own)
	}
	if len(bases) == 0 {
		bases = []string{"TypedDict"}
	}
	doc := r.text(t, r.docs[t.Name()])
	if len(optional) > 0 && len(required) > 0 {
		base := "_" + t.Name() + "Required"
		if err := r.body(t, base, strings.Join(bases, ", "), "", required); err != nil {
			return err
		}
		return r.body(t, t.Name(), base+", total=False", doc, optional)
	}
	if len(optional) > 0 {
		return r.body(t, t.Name(), strings.Join(bases, ", ")+", total=False", doc, optional)
	}
	return r.body(t, t.Name(), strings.Join(bases, ", "), doc, required)
}

// body writes one class statement: its docstring and its keys with their comments.
func (r *renderer) body(t reflect.Type, name, bases, doc string, fields []Field) error {
	fmt.Fprintf(&r.b, "\n\nclass %s(%s):\n", name, bases)
	if doc != "" {
		lines := strings.Split(wrap(doc, lineWidth-7), "\n")
		for i := 1; i < len(lines); i++ {
			if lines[i] != "" {
				lines[i] = "    " + lines[i]
			}
		}
		fmt.Fprintf(&r.b, "    \"\"\"%s\"\"\"\n", strings.Join(lines, "\n"))
		if len(fields) > 0 {
			r.b.WriteString("\n")
		}
	}
	if len(fields) == 0 && doc == "" {
		r.b.WriteString("    pass\n")
	}
	for _, f := range fields {
		typ, err := keyType(f)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", t.Name(), f.Name, err)
		}
		r.comment("    ", t, r.docs[t.Name()+"."+goName(t, f.Name)])
		fmt.Fprintf(&r.b, "    %s: %s\n", f.Name, typ)
	}
	return nil
}

// functional writes a TypedDict whose keys a class body cannot declare.
func (r *renderer) functional(t reflect.Type, fields []Field) error {
	r.b.WriteString("\n\n")
	r.comment("", t, r.docs[t.Name()])
	fmt.Fprintf(&r.b, "%s = TypedDict(\n    %q,\n    {\n", t.Name(), t.Name())
	for _, f := range fields {
		typ, err := keyType(f)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", t.Name(), f.Name, err)
		}
		r.comment("        ", t, r.docs[t.Name()+"."+goName(t, f.Name)])
		fmt.Fprintf(&r.b, "        %q: %s,\n", f.Name, typ)
	}
	r.b.WriteString("    },\n)\n")
	return nil
}

// comment writes a Go comment as Python comment lines.
func (r *renderer) comment(indent string, t reflect.Type, text string) {
	text = r.text(t, text)
	if text == "" {
		return
	}
	for _, line := range strings.Split(wrap(text, lineWidth-len(indent)-2), "\n") {
		fmt.Fprintf(&r.b, "%s# %s\n", indent, line)
	}
}

var goWord = regexp.MustCompile(`\b([A-Z][A-Za-z0-9]*)(?:\.([A-Z][A-Za-z0-9]*))?\b`)

// text is a Go comment of type t as the Python side reads it: Go field
// names become their keys ("CandidateDirs" → "“candidate_dirs“",
// "QuantArgs.CandidateDirs" → "“QuantArgs["candidate_dirs"]“"), and
// space around it is trimmed.
func (r *renderer) text(t reflect.Type, text string) string {
	text = strings.TrimSpace(text)
	return goWord.ReplaceAllStringFunc(text, func(w string) string {
		m := goWord.FindStringSubmatch(w)
		if m[2] != "" {
			if other := typeNamed(m[1]); other != nil {
				if key := jsonName(other, m[2]); key != "" {
					return "``" + m[1] + "[\"" + key + "\"]``"
				}
			}
			return w
		}
		if key := jsonName(t, m[1]); key != "" {
			return "``" + key + "``"
		}
		return w
	})
}

// typeNamed is the struct of this package an op carries under name, or nil.
func typeNamed(name string) reflect.Type {
	var found reflect.Type
	var walk func(reflect.Type)
	seen := map[reflect.Type]bool{}
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t.PkgPath() != wirePath || seen[t] {
			return
		}
		seen[t] = true
		if t.Name() == name {
			found = t
		}
		for i := range t.NumField() {
			walk(t.Field(i).Type)
		}
	}
	for _, op := range Ops {
		walk(op.Args)
		walk(op.Result)
	}
	return found
}

// jsonName is the key of t's Go field goField ("" when t has no such
// exported field, or the key is the Go name).
func jsonName(t reflect.Type, goField string) string {
	f, ok := t.FieldByName(goField)
	if !ok || f.Anonymous {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" || name == "-" {
		return ""
	}
	return name
}

// goName is the Go name of t's own field whose key is key.
func goName(t reflect.Type, key string) string {
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == key {
			return f.Name
		}
	}
	return ""
}

// keyType is the Python type of f's value. An optional pointer is absent
// when nil (omitempty), never null, unless its py tag says null.
func keyType(f Field) (string, error) {
	t := f.Type
	if f.Optional && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return pyType(t, f.Py)
}

// pyType is the Python type of a key of Go type t; py is its py tag
// (null, literal=a|b).
func pyType(t reflect.Type, py string) (string, error) {
	var literal []string
	null := false
	for _, opt := range strings.Split(py, ",") {
		switch {
		case opt == "":
		case opt == "null":
			null = true
		case strings.HasPrefix(opt, "literal="):
			literal = strings.Split(strings.TrimPrefix(opt, "literal="), "|")
		default:
			return "", fmt.Errorf("py tag %q: want null or literal=a|b", py)
		}
	}
	var out string
	switch {
	case literal != nil:
		if t.Kind() != reflect.String {
			return "", fmt.Errorf("py tag %q on a %s: literals are strings", py, t)
		}
		quoted := make([]string, len(literal))
		for i, l := range literal {
			quoted[i] = fmt.Sprintf("%q", l)
		}
		out = "Literal[" + strings.Join(quoted, ", ") + "]"
	default:
		var err error
		if out, err = goType(t); err != nil {
			return "", err
		}
	}
	if null && out != "Any" && !strings.HasSuffix(out, " | None") {
		out += " | None"
	}
	return out, nil
}

func goType(t reflect.Type) (string, error) {
	if t == rawMessage {
		return "Any", nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		inner, err := goType(t.Elem())
		if err != nil || inner == "Any" {
			return inner, err
		}
		return inner + " | None", nil
	case reflect.Slice:
		inner, err := goType(t.Elem())
		return "list[" + inner + "]", err
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return "", fmt.Errorf("a map keyed by %s: JSON keys are strings", t.Key())
		}
		inner, err := goType(t.Elem())
		return "dict[str, " + inner + "]", err
	case reflect.Struct:
		if t.PkgPath() == wirePath {
			return t.Name(), nil
		}
		// Another package's type (read/model's Config): open-ended fields.
		return "dict[str, Any]", nil
	case reflect.Interface:
		return "Any", nil
	case reflect.String:
		return "str", nil
	case reflect.Bool:
		return "bool", nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "int", nil
	case reflect.Float32, reflect.Float64:
		return "float", nil
	}
	return "", fmt.Errorf("no Python type for %s", t)
}

// lineWidth is black's default line length, which comments and docstrings
// keep to as well.
const lineWidth = 88

// wrap refills each paragraph of text that has a line longer than width
// (a key's name is longer than its Go field's); other paragraphs keep
// their lines.
func wrap(text string, width int) string {
	paras := strings.Split(text, "\n\n")
	for i, p := range paras {
		lines := strings.Split(p, "\n")
		if !slices.ContainsFunc(lines, func(l string) bool { return len([]rune(l)) > width }) {
			continue
		}
		var out []string
		line := ""
		for _, w := range strings.Fields(p) {
			switch {
			case line == "":
				line = w
			case len([]rune(line))+1+len([]rune(w)) > width:
				out = append(out, line)
				line = w
			default:
				line += " " + w
			}
		}
		paras[i] = strings.Join(append(out, line), "\n")
	}
	return strings.Join(paras, "\n\n")
}
