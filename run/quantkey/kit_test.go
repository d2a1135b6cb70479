package quantkey

import (
	"testing"

	"phase0/python/warm"
	"phase0/run/orchestrator"
	"phase0/run/quantkey/quanttest"
)

const (
	bundleID   = quanttest.BundleID
	llamaInstr = quanttest.LlamaInstr
	q4nxFolder = quanttest.Q4nxFolder
)

// testSessions lends the tests' runs warm Python sessions.
var testSessions = warm.New(2, 0)

func TestMain(m *testing.M) { quanttest.Main(m, testSessions) }

var mustReadString = quanttest.ReadString

func quantCleanTree(t *testing.T) (*orchestrator.Settings, func(*testing.T)) {
	return quanttest.CleanTree(t, testSessions)
}
