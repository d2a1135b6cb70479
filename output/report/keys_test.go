package report

import (
	"testing"

	"phase0/gate/verdict"
)

// A bundle id's report whose second key was interrupted (or could not be
// evaluated) is the command's: interrupted (exit 130) and an ERROR that
// says why, not a bare ERROR beside interrupted=false (it exited 2).
func TestWithKeysCarriesInterruptAndError(t *testing.T) {
	base := &Report{Status: verdict.Fail, Quantized: &QuantizedKey{Key: "base"}}
	instruct := &Report{Status: verdict.Error, Error: "interrupted: worker: cancelled", Interrupted: true, Quantized: &QuantizedKey{Key: "instruct"}}
	r := WithKeys([]*Report{base, instruct})
	if r.Status != verdict.Error || !r.Interrupted || r.Error != `key "instruct": interrupted: worker: cancelled` || len(r.Keys) != 1 {
		t.Errorf("status %s, interrupted %v, error %q, %d keys", r.Status, r.Interrupted, r.Error, len(r.Keys))
	}
	pass := WithKeys([]*Report{{Status: verdict.Pass}, {Status: verdict.Fail}})
	if pass.Status != verdict.Fail || pass.Interrupted || pass.Error != "" {
		t.Errorf("PASS+FAIL: %s, %v, %q", pass.Status, pass.Interrupted, pass.Error)
	}
}
