// Package listrun runs a command over a list of models (`phase0 run @FILE`,
// `phase0 inspect @FILE`): one orchestrator run per model, the rows in list
// order, and the list's overall status. The tables are report's.
package listrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"phase0/gate/verdict"
	"phase0/output/report"
	"phase0/python/bridge"
	"phase0/python/warm"
	"phase0/read/modellist"
	"phase0/run/chain"
	"phase0/run/orchestrator"
)

// ErrListSetting marks a setting that names one model's files and so cannot
// apply to every model of a list.
var ErrListSetting = errors.New("setting does not apply to a model list")

// Batch is `phase0 run` over a list of models (mlir-air's hf_models.txt):
// one full run per model, in list order, and the overall status (the worst
// row).
type Batch struct {
	Tool        string         `json:"tool"`
	Version     string         `json:"version"`
	Status      verdict.Status `json:"status"`
	Interrupted bool           `json:"interrupted"`
	Seconds     float64        `json:"seconds"`
	// Shard is "I/N" when --shard ran one part of the list; Listed is the
	// list's size before sharding.
	Shard  string      `json:"shard,omitempty"`
	Listed int         `json:"listed,omitempty"`
	Models []*BatchRow `json:"models"`
	// Map is the list judged as the tree's map, when it is the tree's own
	// hf_models.txt (JudgeMap); its FAIL is the list's.
	Map *TreeMap `json:"tree_map,omitempty"`
}

// BatchRow is one model's run report and the list line it came from.
// Report.Source (where a checkpoint came from) keeps its own key.
type BatchRow struct {
	*report.Report
	ListedAt string `json:"listed_at"` // "argument 2", "hf_models.txt:14"
}

// ListConflict names a setting that cannot apply to every model of a list,
// its value and why: each names one model's files, so every model would
// write to (and reuse its verdict from) the same place. key is "" when
// there is none.
func ListConflict(s *orchestrator.Settings) (key, value, why string) {
	switch {
	case s.Name != "":
		return "name", s.Name, "each model of a list gets its own workspace (named from its id, or the tree's folder that names it)"
	case s.ReportDir != "":
		return "report_dir", s.ReportDir, "each model of a list records its report in its own workspace"
	}
	return "", "", ""
}

// RunMany runs Phase 0 for each entry in turn: one model (one checkpoint)
// in memory at a time, each run reusing its recorded PASS when its inputs
// are unchanged. Unless the caller lends sessions, the list's runs share
// one warm Python session (package warm): torch starts once, each run
// resets the session and has its own time limit, and a run that crashed or
// timed out leaves the next one a new session. A row that is rejected or
// cannot be evaluated does not stop the list; an interrupt does, and the
// rows not reached say so.
func RunMany(ctx context.Context, s *orchestrator.Settings, entries []modellist.Entry, version string) (*Batch, error) {
	if key, value, why := ListConflict(s); key != "" {
		return nil, fmt.Errorf("%w: %s is %q: %s", ErrListSetting, key, value, why)
	}
	if s.Sessions == nil || s.Probes == nil {
		shared := *s
		if shared.Sessions == nil {
			sessions := warm.New(1, 0)
			defer sessions.Close()
			shared.Sessions = sessions
		}
		if shared.Probes == nil {
			shared.Probes = bridge.NewProbes() // the interpreter is asked once, not once per row
		}
		s = &shared
	}
	begin := time.Now()
	b := &Batch{Tool: "phase0", Version: version, Status: verdict.Pass, Models: []*BatchRow{}}
	folders := listFolders(s)
	for i, e := range entries {
		var r *report.Report
		if ctx.Err() != nil {
			r = orchestrator.ErrorReport("run", e.Arg, version, fmt.Errorf("not run: %w before it started", chain.ErrInterrupted))
		} else {
			row := *s // stages may adjust their copy; the next model starts from the given settings
			var log *rowLog
			if s.Progress != nil {
				log = &rowLog{out: s.Progress}
				row.Progress, row.OnStage = log, log.stage
				fmt.Fprintf(log, "phase0: [%d/%d] %s (%s)\n", i+1, len(entries), e.Arg, e.Source)
			}
			r = runListed(ctx, &row, folders, e.Arg, version)
			if log != nil {
				log.end(fmt.Sprintf("phase0: [%d/%d] %s", i+1, len(entries), e.Arg), r)
			}
		}
		b.Models = append(b.Models, &BatchRow{Report: r, ListedAt: e.Source})
		b.Status = verdict.Worst(b.Status, r.Status)
		b.Interrupted = b.Interrupted || r.Interrupted
	}
	b.Seconds = time.Since(begin).Seconds()
	return b, nil
}

// SetMap adds the tree map's verdict to the list's.
func (b *Batch) SetMap(m *TreeMap) {
	b.Map = m
	if m != nil {
		b.Status = verdict.Worst(b.Status, m.Status)
	}
}

// ExitCode is the worst row's exit code, or the tree map's: 130 when
// interrupted.
func (b *Batch) ExitCode() int {
	code := b.Map.exitCode()
	for _, m := range b.Models {
		code = max(code, orchestrator.ExitCode(m.Report))
	}
	return code
}

// Text is the list's table (report.RunListText): a row per model in list
// order, then why each row that did not pass did not.
func (b *Batch) Text() string {
	rows := make([]report.ListRow, len(b.Models))
	for i, m := range b.Models {
		rows[i] = report.ListRow{Report: m.Report, ListedAt: m.ListedAt}
	}
	text := report.RunListText(rows, report.ListTotals{Status: b.Status, Interrupted: b.Interrupted, Seconds: b.Seconds, Shard: b.Shard, Listed: b.Listed})
	if b.Map != nil {
		text += "\n" + b.Map.Text()
	}
	return text
}
