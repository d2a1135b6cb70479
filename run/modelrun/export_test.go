package modelrun

// TestSessions are the warm sessions the package's external tests (a list
// through the quantized tree, package listrun) lend their runs.
var TestSessions = testSessions
