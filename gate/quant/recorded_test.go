package quant

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"phase0/wire"
)

// TestRecordedFactsRoundTrip: every quant_e2e answer the worker gave for
// the fixtures (testdata/twin*/) decodes into wire.QuantE2EFacts with no
// key unknown or missing, and encodes back to the same JSON value.
func TestRecordedFactsRoundTrip(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "twin*", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no recorded facts under testdata/twin*/ (%v)", err)
	}
	required := 0
	for _, f := range wire.Fields(reflect.TypeFor[wire.QuantE2EFacts]()) {
		if !f.Optional {
			required++
		}
	}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var f wire.QuantE2EFacts
		if err := dec.Decode(&f); err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		again, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		var want, got map[string]any
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(again, &got); err != nil {
			t.Fatal(err)
		}
		if len(want) != required {
			t.Errorf("%s has %d keys, wire.QuantE2EFacts requires %d", p, len(want), required)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s does not encode back to the same facts", p)
		}
	}
}
