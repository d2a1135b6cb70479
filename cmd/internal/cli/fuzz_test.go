package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"phase0/run/settings"
)

// FuzzSettings feeds arbitrary bytes as a --config file to the settings
// layer (settings.ReadYAML's one-document, known-key check, then configs'
// one parser). It must
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
	for _, row := range settings.Table {
		os.Unsetenv(row.Env()) // the file alone decides
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "settings.yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := &cobra.Command{}
		cmd.Flags().String("config", path, "")
		s, _, err := layerSettings(cmd, io.Discard, nil)
		if err == nil {
			for _, row := range settings.Table {
				if row.Kind != settings.Count {
					continue
				}
				v, _ := row.Get(s)
				if _, perr := row.Parse(settings.TextValue(fmt.Sprint(v))); perr != nil {
					t.Errorf("accepted %s %v outside its range: %v", row.Key, v, perr)
				}
			}
			switch {
			case s.Decode > s.MaxSeq:
				t.Errorf("accepted decode %d with max_seq %d", s.Decode, s.MaxSeq)
			case s.Timeout < time.Second:
				t.Errorf("accepted timeout %v", s.Timeout)
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
