package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// FuzzSettings feeds arbitrary bytes as a --config file to the settings
// layer (viper's YAML, the strict key check, the typed parsers). It must
// never panic; what it accepts must satisfy the settings' invariants; what
// it refuses must come out of the CLI as exit 2 and exactly one JSON object.
// The seed corpus of malformed files is testdata/fuzz/FuzzSettings.
func FuzzSettings(f *testing.F) {
	for _, seed := range []string{
		"decode: 4\nmax_seq: 8\ntimeout: 90s\n",
		"cpu_helpers:\n  attention_fallback: false\n",
	} {
		f.Add([]byte(seed))
	}
	for _, key := range []string{"PHASE0_DECODE", "PHASE0_MAX_SEQ", "PHASE0_TIMEOUT", "PHASE0_WORKERS", "PHASE0_SCAN", "PHASE0_PROMPT_STYLE", "PHASE0_MEMORY_CHECK", "PHASE0_FORCE"} {
		os.Unsetenv(key) // the file alone decides
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "settings.yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := &cobra.Command{}
		cmd.Flags().String("config", path, "")
		s, _, err := settings(cmd, io.Discard, nil)
		if err == nil {
			switch {
			case s.MaxSeq < 1 || s.MaxSeq > 1<<31:
				t.Errorf("accepted max_seq %d", s.MaxSeq)
			case s.Decode < 0 || s.Decode > s.MaxSeq:
				t.Errorf("accepted decode %d with max_seq %d", s.Decode, s.MaxSeq)
			case s.Timeout <= 0:
				t.Errorf("accepted timeout %v", s.Timeout)
			case s.Workers < 0 || s.Workers > 1<<31:
				t.Errorf("accepted workers %d", s.Workers)
			case s.PromptStyle != "" && s.PromptStyle != "base" && s.PromptStyle != "instruct":
				t.Errorf("accepted prompt_style %q", s.PromptStyle)
			}
			return
		}
		if strings.Contains(err.Error(), "\x00") {
			t.Errorf("error holds a NUL byte: %q", err)
		}
		code, stdout, _ := run(t, "inspect", "/no/such/model", "--config", path, "--json")
		dec := json.NewDecoder(strings.NewReader(stdout))
		var rep struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		}
		if derr := dec.Decode(&rep); derr != nil || dec.More() {
			t.Fatalf("refused settings (%v) did not print one JSON object: %v\n%s", err, derr, stdout)
		}
		if code != 2 || rep.Status != "ERROR" || rep.Error == "" {
			t.Errorf("refused settings: exit %d, status %s, error %q; want 2, ERROR and the reason (%v)", code, rep.Status, rep.Error, err)
		}
	})
}
