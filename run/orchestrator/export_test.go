package orchestrator

// The helpers the package's external tests (orchestrator_test: the list
// runs of package listrun, run end to end here) share with its own.
var (
	Isolated     = isolated
	SettingsFor  = settingsFor
	StageNames   = stageNames
	Tiny         = tiny
	UpstreamTree = upstreamTree
)
