package weights

import (
	"testing"

	"phase0/internal/sharetest"
)

// TestCloneSharesNothing: the scan completes a clone of the weights stage's
// gate 1; no field of the original may change with it.
func TestCloneSharesNothing(t *testing.T) {
	r := NewResult()
	c := sharetest.Check(t, r, (*Result).Clone)
	c.AddNonFinite([]NonFinite{{Name: "x", Count: 1, NaN: 1}})
	if len(r.NonFinite) != 1 || r.Scanned {
		t.Errorf("AddNonFinite on the clone changed the original: %+v", r.NonFinite)
	}
}
