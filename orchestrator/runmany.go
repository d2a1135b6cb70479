package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"phase0/configgate"
	"phase0/judge"
	"phase0/modellist"
	"phase0/report"
	"phase0/verdict"
	"phase0/weights"
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
	Interrupted bool           `json:"interrupted,omitempty"`
	Seconds     float64        `json:"seconds"`
	Models      []*BatchRow    `json:"models"`
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
func ListConflict(s *Settings) (key, value, why string) {
	switch {
	case s.Name != "":
		return "name", s.Name, "each model of a list gets its own workspace (named from its id, or the tree's folder that names it)"
	case s.ReportDir != "":
		return "report_dir", s.ReportDir, "each model of a list records its report in its own workspace"
	}
	return "", "", ""
}

// RunMany runs Phase 0 for each entry in turn: one model (one Python
// worker, one checkpoint) in memory at a time, each run reusing its
// recorded PASS when its inputs are unchanged. A row that is rejected or
// cannot be evaluated does not stop the list; an interrupt does, and the
// rows not reached say so.
func RunMany(ctx context.Context, s *Settings, entries []modellist.Entry, version string) (*Batch, error) {
	if key, value, why := ListConflict(s); key != "" {
		return nil, fmt.Errorf("%w: %s is %q: %s", ErrListSetting, key, value, why)
	}
	begin := time.Now()
	b := &Batch{Tool: "phase0", Version: version, Status: verdict.Pass, Models: []*BatchRow{}}
	folders := listFolders(s)
	for i, e := range entries {
		var r *report.Report
		if ctx.Err() != nil {
			r = ErrorReport("run", e.Arg, version, fmt.Errorf("not run: %w before it started", errInterrupted))
		} else {
			if s.Progress != nil {
				fmt.Fprintf(s.Progress, "phase0: [%d/%d] %s (%s)\n", i+1, len(entries), e.Arg, e.Source)
			}
			row := *s // stages may adjust their copy; the next model starts from the given settings
			r = runListed(ctx, &row, folders, e.Arg, version)
			if s.Progress != nil {
				fmt.Fprintf(s.Progress, "phase0: [%d/%d] %s: %s in %.1fs\n", i+1, len(entries), e.Arg, r.Status, r.Seconds)
			}
		}
		b.Models = append(b.Models, &BatchRow{Report: r, ListedAt: e.Source})
		b.Status = verdict.Worst(b.Status, r.Status)
		b.Interrupted = b.Interrupted || r.Interrupted
	}
	b.Seconds = time.Since(begin).Seconds()
	return b, nil
}

// ExitCode is the worst row's exit code: 130 when interrupted.
func (b *Batch) ExitCode() int {
	code := 0
	for _, m := range b.Models {
		code = max(code, ExitCode(m.Report))
	}
	return code
}

// Text is one table, a row per model in list order (model, folder, mode,
// each gate, seconds, verdict), then why each row that did not pass did not.
func (b *Batch) Text() string {
	var sb strings.Builder
	tw := tabwriter.NewWriter(&sb, 2, 4, 2, ' ', 0)
	gates := allGates()
	header := []string{"MODEL", "FOLDER", "MODE", "ARCHITECTURE"}
	for _, g := range gates {
		header = append(header, strings.ToUpper(g.Title))
	}
	fmt.Fprintln(tw, strings.Join(append(header, "REFERENCE", "SECONDS", "VERDICT"), "\t"))
	for _, m := range b.Models {
		folder, mode := "-", "-"
		if w := m.Workspace; w != nil {
			folder, mode = w.Name, w.Mode
			if mode == report.ModeValidatedExisting {
				mode = "validated"
			}
		}
		if m.ReusedFrom != nil {
			mode += " (reused)"
		}
		ran := map[string]verdict.Status{}
		for _, g := range m.Gates.Rows() {
			ran[g.Title] = g.Section.Status
		}
		cells := []string{m.Model, folder, mode, archCell(m.Report)}
		for _, g := range gates {
			cells = append(cells, report.OrDash(string(ran[g.Title])))
		}
		cells = append(cells, referenceCell(m.Reference), fmt.Sprintf("%.1f", m.Seconds), string(m.Status))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	var why []string
	for _, m := range b.Models {
		if m.Status != verdict.Pass {
			why = append(why, fmt.Sprintf("  %s (%s): %s %s", m.Model, m.ListedAt, m.Status, reason(m.Report)))
		}
	}
	if len(why) > 0 {
		fmt.Fprintf(&sb, "\n%s\n", strings.Join(why, "\n"))
	}
	counts := map[verdict.Status]int{}
	for _, m := range b.Models {
		counts[m.Status]++
	}
	var parts []string
	for _, st := range []verdict.Status{verdict.Pass, verdict.Warn, verdict.Fail, verdict.Rejected, verdict.Error} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	status := string(b.Status)
	if b.Interrupted {
		status += " (interrupted)"
	}
	fmt.Fprintf(&sb, "\n%d model(s) in %.1fs: %s (%s)\n", len(b.Models), b.Seconds, status, strings.Join(parts, ", "))
	return sb.String()
}

// archCell is the architecture gate's outcome: REJECTED, PASS once a
// config was extracted, "-" when the run stopped before config.json.
func archCell(r *report.Report) string {
	switch {
	case len(r.Rejections) > 0:
		return string(verdict.Rejected)
	case r.Config != nil:
		return string(verdict.Pass)
	}
	return "-"
}

// allGates is every gate section a run can fill, in report order: the
// table's columns.
func allGates() []report.Gate {
	return report.Gates{Weights: &weights.Result{}, PyWeights: &weights.Loader{}, ConfigConsistency: &configgate.Consistency{}, HFBaseline: &judge.Baseline{}}.Rows()
}

// referenceCell says whether the recorded reference is there: recorded
// anew, reused by its key, or why not.
func referenceCell(r *report.Reference) string {
	switch {
	case r == nil:
		return "-"
	case r.Reused:
		return "reused"
	case r.Status == verdict.Pass:
		return "recorded"
	}
	return string(r.Status)
}

// reason is why a row did not pass, in one line: the rejection codes and
// messages, the error, or the first failing gate's summary.
func reason(r *report.Report) string {
	if len(r.Rejections) > 0 {
		var parts []string
		for _, rej := range r.Rejections {
			parts = append(parts, fmt.Sprintf("[%s] %s", rej.Code, rej.Message))
		}
		return strings.Join(parts, "; ")
	}
	if r.Error != "" {
		return firstLine(r.Error)
	}
	for _, g := range r.Gates.Rows() {
		if g.Section.Status.Failed() {
			return g.Title + ": " + g.Section.Summary
		}
	}
	return ""
}
