package orchestrator

import (
	"io"
	"os"
	"time"

	"phase0/output/report"
	"phase0/python/bridge"
	"phase0/python/warm"
	"phase0/run/wsfolder"
)

// Settings are the resolved configuration of one phase0 invocation.
type Settings struct {
	LLMSDir           string
	OutDir            string // holds <name>/ without an llms tree ("" = ./workspace); exclusive with LLMSDir
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
	// LicenseHeader opens every generated Python file as comment lines
	// (scaffold.LicenseLines of the license_header setting); nil: none.
	LicenseHeader []string
	// MaxPerplexityRatio: gate 2 fails when the calibration passage's
	// perplexity exceeds this × vocab_size (0 = baseline.DefaultMaxPerplexityRatio).
	// Setting max_perplexity_ratio / PHASE0_MAX_PERPLEXITY_RATIO.
	MaxPerplexityRatio float64
	// ReferenceSteps greedy tokens per prompt in the recorded reference (0 = run
	// records none); ReferenceDtype and ReferenceOut are `phase0 reference`'s
	// --dtype and --out; Refresh records anew even when the key matches.
	ReferenceSteps int
	ReferenceDtype string
	ReferenceOut   string
	Refresh        bool
	// PyShimDir is a folder holding a working copy of phase0_shim ("" = the
	// copy built into the binary). Setting pyshim / PHASE0_PYSHIM.
	PyShimDir string
	// CacheDir is phase0's own cache ("" = the user cache dir + /phase0).
	// Setting cache / PHASE0_CACHE.
	CacheDir string
	// Env looks up the HF variables (HF_HOME, HF_HUB_CACHE, HF_HUB_OFFLINE,
	// TRANSFORMERS_OFFLINE, …): os.Getenv from the CLI, a map in tests.
	Env func(string) string
	// HeadersOnly lets a hub model that is not in the HF cache be inspected
	// from its config.json and safetensors headers alone (inspect only).
	HeadersOnly bool
	// Progress receives human progress lines and bars (stderr); never nil.
	Progress io.Writer
	// OnStage, when set, is told of each stage before its line is written (listrun).
	OnStage func(report.Stage)
	// ProgressBars enables bars (stderr is a terminal, or forced).
	ProgressBars bool
	// Fresh makes run ignore a recorded verdict whose inputs are unchanged
	// (reuse.go) and run everything. Setting fresh / PHASE0_FRESH / --fresh.
	Fresh bool
	// Sessions, when set, lends the run a warm Python session instead of
	// starting one (package warm); nil starts a fresh session per run.
	Sessions *warm.Sessions
	// Probes, when set, remembers each interpreter's probe (a list's); nil: ask each run.
	Probes *bridge.Probes
}

// Getenv reads an environment variable through the settings (os.Getenv when
// the caller set no lookup).
func (s *Settings) Getenv(key string) string {
	if s.Env == nil {
		return os.Getenv(key)
	}
	return s.Env(key)
}

// LookupEnv is Getenv that tells an unset variable from an empty one.
func (s *Settings) LookupEnv(key string) (string, bool) {
	if s.Env == nil {
		return os.LookupEnv(key)
	}
	v := s.Env(key)
	return v, v != ""
}

// Places says where this run's folders go (package wsfolder).
func (s *Settings) Places() wsfolder.Places {
	return wsfolder.Places{LLMSDir: s.LLMSDir, OutDir: s.OutDir, ReportDir: s.ReportDir, Name: s.Name, Cache: s.python().Cache}
}
