package config

import (
	"testing"

	"phase0/internal/sharetest"
)

// TestCloneSharesNothing: config_facts completes a clone of the weights
// stage's cross-check; no field of the original may change with it.
func TestCloneSharesNothing(t *testing.T) {
	c := New()
	d := sharetest.Check(t, c, (*Consistency).Clone)
	d.FailWith("added to the clone")
	if len(c.Findings) != 1 || c.Findings[0] != "original" {
		t.Errorf("a finding on the clone changed the original: %+v", c.Section)
	}
}
