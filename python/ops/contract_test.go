package ops

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"phase0/internal/testenv"
	"phase0/python/worker"
	"phase0/wire"
)

// The worker re-executes this test binary; it must act as the worker then.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == worker.Subcommand {
		os.Exit(worker.Main())
	}
	os.Exit(m.Run())
}

// fieldSchema mirrors phase0_shim.contract.FieldSchema.
type fieldSchema struct {
	Optional bool                   `json:"optional"`
	Fields   map[string]fieldSchema `json:"fields"` // nil: not a TypedDict
}

type opSchema struct {
	Args   map[string]fieldSchema `json:"args"`
	Result map[string]fieldSchema `json:"result"`
}

// pythonSchema asks the real worker, on phase0_shim.contract, for the ops
// phase0_shim.ops exposes and their TypedDicts.
func pythonSchema(t *testing.T) map[string]opSchema {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	opts := worker.Options{Python: testenv.Python(t), ExtraPath: []string{testenv.PyShim()}, Exe: []string{exe, worker.Subcommand}, Timeout: 5 * time.Minute}
	sess, err := worker.Start(context.Background(), opts, "phase0_shim.contract")
	if err != nil {
		t.Fatal(err)
	}
	c := New(func(context.Context) (Session, error) { return sess, nil })
	defer c.Close()
	got, _, err := call[struct {
		Ops map[string]opSchema `json:"ops"`
	}](context.Background(), c, "schema", wire.NoArgs{})
	if err != nil {
		t.Fatal(err)
	}
	return got.Ops
}

// goFields is the Go side of a fieldSchema: the struct that t is or wraps
// (pointer, slice, map value), nil for anything else.
func goFields(t reflect.Type) map[string]fieldSchema {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		if t == rawMessageType {
			return nil
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	out := map[string]fieldSchema{}
	for name, f := range wire.Fields(t) {
		out[name] = fieldSchema{Optional: f.Optional, Fields: goFields(f.Type)}
	}
	return out
}

// compare lists where the Go and Python keys disagree. Nested keys are
// compared where both sides declare a class; where Python types a value as
// open-ended (dict[str, Any]), Go's strict decoding alone guards it.
func compare(where string, gof, pyf map[string]fieldSchema) []string {
	var diffs []string
	for _, name := range sortedKeys(gof) {
		p, ok := pyf[name]
		g := gof[name]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s.%s: in Go, not in Python", where, name))
		case g.Optional != p.Optional:
			diffs = append(diffs, fmt.Sprintf("%s.%s: optional in Go %v, in Python %v", where, name, g.Optional, p.Optional))
		case g.Fields != nil && p.Fields != nil:
			diffs = append(diffs, compare(where+"."+name, g.Fields, p.Fields)...)
		}
	}
	for _, name := range sortedKeys(pyf) {
		if _, ok := gof[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s.%s: in Python, not in Go", where, name))
		}
	}
	return diffs
}

// TestContract: phase0_shim.ops exposes exactly the ops this package calls,
// and each op's argument and result keys (names and optionality, nested
// classes included) are the same on both sides.
func TestContract(t *testing.T) {
	py := pythonSchema(t)
	signatures := map[string]wire.Op{}
	for _, op := range wire.Ops {
		signatures[op.Name] = op
	}
	goOps, pyOps := sortedKeys(signatures), sortedKeys(py)
	if !slices.Equal(goOps, pyOps) {
		t.Errorf("ops differ: Go calls %v, phase0_shim.ops exposes %v", goOps, pyOps)
	}
	for _, op := range goOps {
		p, ok := py[op]
		if !ok {
			continue
		}
		sig := signatures[op]
		diffs := append(compare(op+" args", goFields(sig.Args), p.Args), compare(op+" result", goFields(sig.Result), p.Result)...)
		sort.Strings(diffs)
		for _, d := range diffs {
			t.Errorf("%s", d)
		}
	}
}
