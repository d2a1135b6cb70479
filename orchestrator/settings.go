package orchestrator

import (
	"io"
	"time"
)

// Settings are the resolved configuration of one phase0 invocation.
type Settings struct {
	LLMSDir           string
	Python            string
	Name              string
	PromptStyle       string
	Prompt            string
	Decode            int
	MaxSeq            int
	Timeout           time.Duration
	Scan              bool
	Workers           int
	ReportDir         string
	Force             bool
	MemoryCheck       bool
	AttentionFallback bool
	// PyShimDir is the folder holding the phase0_shim package.
	PyShimDir string
	// Progress receives human progress lines and bars (stderr); never nil.
	Progress io.Writer
	// ProgressBars enables bars (stderr is a terminal, or forced).
	ProgressBars bool
}
