package report

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// jsonKeys collects every JSON object key reachable from t: the json tag
// (or field name) of each exported field of every struct inside it.
func jsonKeys(t reflect.Type, keys map[string]bool, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			jsonKeys(f.Type, keys, seen)
			continue
		}
		if name == "" {
			name = f.Name
		}
		keys[name] = true
		jsonKeys(f.Type, keys, seen)
	}
}

// TestPythonReportReadsOnlyGoKeys: `import phase0`'s typed report views
// (pyext/python/phase0/report.py) read the JSON with d.get("key", default),
// so a key renamed in Go would silently become the default in Python. Every
// key the Python reads must be one the Go report writes.
func TestPythonReportReadsOnlyGoKeys(t *testing.T) {
	src, err := os.ReadFile("../../cmd/pyext/python/phase0/report.py")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	jsonKeys(reflect.TypeFor[Report](), keys, map[reflect.Type]bool{})
	read := regexp.MustCompile(`(?:\.get\(|\[)"([a-z0-9_]+)"`).FindAllSubmatch(src, -1)
	if len(read) < 50 {
		t.Fatalf("found only %d keys read in report.py: the pattern no longer matches how it reads the JSON", len(read))
	}
	var unknown []string
	for _, m := range read {
		if k := string(m[1]); !keys[k] && !slices.Contains(unknown, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		t.Errorf("cmd/pyext/python/phase0/report.py reads keys the Go report never writes: %v", unknown)
	}
}
