package wire

import (
	"reflect"
	"strings"
)

// Field is one JSON key of a struct that crosses the boundary.
type Field struct {
	Name     string
	Type     reflect.Type
	Optional bool   // the json tag has omitempty: the key may be absent
	Py       string // the py tag: what the Python type adds (null, literal=…)
}

// Fields lists the JSON keys of struct type t as encoding/json sees them,
// by name: json tags name them, "-" and unexported fields are skipped, and
// untagged embedded structs contribute their own keys.
func Fields(t reflect.Type) map[string]Field {
	out := map[string]Field{}
	for _, f := range OwnFields(t) {
		out[f.Name] = f
	}
	for _, e := range Embedded(t) {
		for k, v := range Fields(e) {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
	return out
}

// OwnFields lists the keys struct type t declares itself, in declaration
// order: the keys of its embedded structs are theirs (Embedded).
func OwnFields(t reflect.Type) []Field {
	var out []Field
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || embeds(f) != nil || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		out = append(out, Field{Name: name, Type: f.Type, Optional: hasOption(opts, "omitempty"), Py: f.Tag.Get("py")})
	}
	return out
}

// Embedded lists the structs t embeds without a json name, whose keys
// encoding/json promotes into t's object.
func Embedded(t reflect.Type) []reflect.Type {
	var out []reflect.Type
	for i := range t.NumField() {
		if e := embeds(t.Field(i)); e != nil {
			out = append(out, e)
		}
	}
	return out
}

// embeds is the struct an untagged embedded field promotes, or nil.
func embeds(f reflect.StructField) reflect.Type {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if !f.Anonymous || name != "" {
		return nil
	}
	t := f.Type
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	return t
}

func hasOption(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}
