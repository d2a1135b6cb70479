package main

import (
	"bufio"
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"phase0/gate/compare"
	"phase0/gate/preflight"
	"phase0/output/report"
	"phase0/run/listrun"
)

// The --json shapes are documented in docs/reports.md as key trees; these
// tests hold them to the Go types the reports are encoded from, key for key,
// with "?" exactly on the keys encoding/json leaves out when empty.

// schemaTypes are the documented schemas and the type each one encodes.
var schemaTypes = map[string]reflect.Type{
	"report":       reflect.TypeFor[report.Report](),
	"section":      nil, // included by the others only
	"preflight":    reflect.TypeFor[preflight.Report](),
	"run-list":     reflect.TypeFor[listrun.Batch](),
	"inspect-list": reflect.TypeFor[listrun.Triage](),
	"compare":      reflect.TypeFor[compare.Result](),
}

// keyPaths is a key tree as "a.b.c" paths, each marked with a trailing "?"
// when it is left out when empty.
type keyPaths []string

// typeKeys walks t as encoding/json encodes it: tagged exported fields,
// embedded structs flattened (a shallower field hides a deeper one of the
// same name), pointers, slices and arrays seen through to their elements;
// time.Time and json.Marshaler types are leaves.
func typeKeys(t reflect.Type, prefix string, out *keyPaths, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == reflect.TypeFor[time.Time]() || t.Implements(reflect.TypeFor[json.Marshaler]()) || seen[t] {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	type field struct {
		name     string
		optional bool
		typ      reflect.Type
		depth    int
	}
	var fields []field
	var embedded []reflect.Type
	defer func() {
		for _, et := range embedded {
			delete(seen, et)
		}
	}()
	var collect func(t reflect.Type, depth int)
	collect = func(t reflect.Type, depth int) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if f.Anonymous && name == "" {
				et := f.Type
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if et.Kind() == reflect.Struct {
					// An embedded struct is this type too: a field of its
					// own type (a report's keys) is the cycle it is.
					if !seen[et] {
						seen[et] = true
						embedded = append(embedded, et)
					}
					collect(et, depth+1)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			fields = append(fields, field{name, strings.Contains(opts, "omitempty"), f.Type, depth})
		}
	}
	collect(t, 0)
	for _, f := range fields {
		if slices.ContainsFunc(fields, func(g field) bool { return g.name == f.name && g.depth < f.depth }) {
			continue
		}
		key := prefix + f.name
		mark := ""
		if f.optional {
			mark = "?"
		}
		*out = append(*out, key+mark)
		typeKeys(f.typ, key+".", out, seen)
	}
}

var schemaMarker = regexp.MustCompile(`^<!-- schema ([a-z-]+) -->$`)

// docSchemas reads every "<!-- schema NAME -->" key tree of a document:
// NAME → its lines, as written.
func docSchemas(t *testing.T, doc string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	closed := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(doc))
	name, in := "", false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case name == "" && schemaMarker.MatchString(line):
			name = schemaMarker.FindStringSubmatch(line)[1]
		case name != "" && !in && strings.HasPrefix(line, "```"):
			in = true
		case in && strings.HasPrefix(line, "```"):
			if closed[name] {
				t.Errorf("schema %s documented twice", name)
			}
			closed[name], name, in = true, "", false
		case in:
			out[name] = append(out[name], line)
		}
	}
	if name != "" {
		t.Errorf("schema %s: no closed ``` block after its marker", name)
	}
	return out
}

// docKeys expands a documented key tree into paths: two spaces of indent
// per level, the key is the line's first word ("key", "key?", "key[]",
// "key?[]"), "+ NAME" includes schema NAME's keys at that level; a key
// written after an include replaces the included key of its name (as an
// outer struct field hides an embedded one).
func docKeys(t *testing.T, schemas map[string][]string, name string, depth int) keyPaths {
	t.Helper()
	lines, ok := schemas[name]
	if !ok {
		t.Fatalf("docs/reports.md has no schema %q", name)
	}
	if depth > 4 {
		t.Fatalf("schema %s: includes nest too deep", name)
	}
	var out keyPaths
	var stack []string // the key at each open level
	for _, line := range lines {
		if strings.TrimSpace(line) == "" {
			continue
		}
		text := strings.TrimLeft(line, " ")
		indent := len(line) - len(text)
		if indent%2 != 0 || indent/2 > len(stack) {
			t.Errorf("schema %s: bad indent: %q", name, line)
			continue
		}
		stack = stack[:indent/2]
		prefix := ""
		for _, k := range stack {
			prefix += k + "."
		}
		if inc, ok := strings.CutPrefix(text, "+ "); ok {
			for _, k := range docKeys(t, schemas, strings.Fields(inc)[0], depth+1) {
				out = append(out, prefix+k)
			}
			continue
		}
		word := strings.Fields(text)[0]
		word = strings.TrimSuffix(word, "[]")
		optional := strings.HasSuffix(word, "?")
		word = strings.TrimSuffix(word, "?")
		out = slices.DeleteFunc(out, func(k string) bool { return k == prefix+word || k == prefix+word+"?" })
		if optional {
			out = append(out, prefix+word+"?")
		} else {
			out = append(out, prefix+word)
		}
		stack = append(stack, word)
	}
	return out
}

func TestSchemaDocumentedKeyForKey(t *testing.T) {
	schemas := docSchemas(t, readDoc(t, "docs/reports.md"))
	for name := range schemas {
		if _, ok := schemaTypes[name]; !ok {
			t.Errorf("docs/reports.md documents schema %q, which no test ties to a type", name)
		}
	}
	for name, typ := range schemaTypes {
		if typ == nil {
			continue
		}
		var code keyPaths
		typeKeys(typ, "", &code, map[reflect.Type]bool{})
		doc := docKeys(t, schemas, name, 0)
		for _, k := range code {
			if !slices.Contains(doc, k) {
				t.Errorf("schema %s: the JSON has %s; docs/reports.md does not say so (\"?\": left out when empty)", name, k)
			}
		}
		for _, k := range doc {
			if !slices.Contains(code, k) {
				t.Errorf("schema %s: docs/reports.md documents %s; the JSON has no such key (\"?\": left out when empty)", name, k)
			}
		}
		dup := map[string]bool{}
		for _, k := range doc {
			if dup[k] {
				t.Errorf("schema %s: %s documented twice", name, k)
			}
			dup[k] = true
		}
	}
}
