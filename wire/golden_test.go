package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestEncodingsAreRecorded: every op's arguments and result, filled with
// values derived from their key paths, encode byte for byte as recorded in
// testdata/encodings.json (written from the structs before they moved
// here): a key renamed, retyped, reordered or made optional changes the
// wire and fails here. -update records the new encodings.
func TestEncodingsAreRecorded(t *testing.T) {
	ops := map[string][2]reflect.Type{}
	for _, op := range Ops {
		ops[op.Name] = [2]reflect.Type{op.Args, op.Result}
	}
	enc, err := encodings(ops)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(enc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "encodings.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, want) {
		return
	}
	var g, w map[string]map[string]string
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	for op := range w {
		if _, ok := g[op]; !ok {
			t.Errorf("op %s is recorded, not in Ops", op)
		}
	}
	for op, sides := range g {
		for what, text := range sides {
			if w[op][what] != text {
				t.Errorf("op %s %s encodes\n%s\nrecorded\n%s", op, what, text, w[op][what])
			}
		}
	}
}

// fill sets every field of v (a pointer) to a value derived from its JSON
// key path, so two declarations of the same keys fill alike.
func fill(v reflect.Value, path string) {
	h := fnv.New32a()
	h.Write([]byte(path))
	n := int64(h.Sum32()%1000) + 1
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), path)
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() && !f.Anonymous {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" {
				fill(v.Field(i), path)
				continue
			}
			fill(v.Field(i), path+"."+name)
		}
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes([]byte(fmt.Sprint(n)))
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		fill(s.Index(0), path+"[0]")
		fill(s.Index(1), path+"[1]")
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, path+".k")
		m.SetMapIndex(reflect.ValueOf("k"), e)
		v.Set(m)
	case reflect.Interface:
		v.Set(reflect.ValueOf(fmt.Sprintf("v%d", n)))
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", n))
	case reflect.Bool:
		v.SetBool(n%2 == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(n) / 7)
	}
}

// encodings is every op's arguments and result, filled and zero, as
// json.Marshal writes them: op name → "args", "result", "zero args",
// "zero result" → the JSON text.
func encodings(ops map[string][2]reflect.Type) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for name, sig := range ops {
		out[name] = map[string]string{}
		for i, what := range []string{"args", "result", "zero args", "zero result"} {
			v := reflect.New(sig[i%2])
			if i < 2 {
				fill(v.Elem(), "")
			}
			b, err := json.Marshal(v.Interface())
			if err != nil {
				return nil, err
			}
			out[name][what] = string(b)
		}
	}
	return out, nil
}
