package listrun

import (
	"context"
	"errors"
	"strings"
	"testing"

	"phase0/read/modellist"
	"phase0/run/orchestrator"
)

// TestRunManyRefusesOneModelSettings: --name and --report-dir name one
// model's files; a list refuses them before anything runs.
func TestRunManyRefusesOneModelSettings(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  func(*orchestrator.Settings)
		want string
	}{
		{"name", func(s *orchestrator.Settings) { s.Name = "mine" }, `name is "mine"`},
		{"report dir", func(s *orchestrator.Settings) { s.ReportDir = "/tmp/reports" }, `report_dir is "/tmp/reports"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &orchestrator.Settings{MaxSeq: 64}
			tt.set(s)
			var progress strings.Builder
			s.Progress = &progress
			b, err := RunMany(context.Background(), s, []modellist.Entry{{Arg: "/no/such/model", Source: "argument 1"}}, "test")
			if b != nil || !errors.Is(err, ErrListSetting) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("batch %v, error %v; want ErrListSetting naming %q", b, err, tt.want)
			}
			if progress.Len() != 0 {
				t.Errorf("something ran: %s", progress.String())
			}
		})
	}
}
