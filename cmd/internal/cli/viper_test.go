package cli

import (
	"os"
	"path/filepath"
	"testing"

	"phase0/run/orchestrator"
)

// A --config file written by a viper-based tool (viper.WriteConfig: every
// key lower-case, sorted, sections as nested maps, durations as strings) is
// read as it is: phase0's own layering is hand-written (see
// docs/settings.md), but its file format is the one such tools write.
func TestConfigWrittenByViperIsRead(t *testing.T) {
	const written = `cache: ""
cpu_helpers:
    attention_fallback: false
decode: 0
force: false
fresh: false
license_header: ""
llms_dir: ""
max_perplexity_ratio: 0.2
max_seq: 128
memory_check: true
name: ""
out_dir: ""
prompt: ""
prompt_style: ""
pyshim: ""
python: ""
reference_steps: 16
refresh: false
report_dir: ""
scan: true
timeout: 45m0s
workers: 3
`
	cfg := filepath.Join(t.TempDir(), "phase0.yaml")
	if err := os.WriteFile(cfg, []byte(written), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := parseSettings(t, "run", []string{"--config", cfg}, nil)
	if err != nil {
		t.Fatalf("a viper-written --config is refused: %v", err)
	}
	s := got.s.(*orchestrator.Settings)
	if s.MaxSeq != 128 || s.ReferenceSteps != 16 || s.Workers != 3 || !s.Scan || s.MaxPerplexityRatio != 0.2 || s.Timeout.Minutes() != 45 {
		t.Errorf("read %+v", s)
	}
}
