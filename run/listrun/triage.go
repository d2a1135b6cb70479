package listrun

import (
	"context"
	"fmt"
	"strings"

	"phase0/gate/verdict"
	"phase0/internal/parallel"
	"phase0/output/report"
	"phase0/read/modellist"
	"phase0/run/chain"
	"phase0/run/orchestrator"
)

// Triage is `phase0 inspect` over several models: one report per model, in
// input order, and the overall status (the worst of them).
type Triage struct {
	Tool    string         `json:"tool"`
	Version string         `json:"version"`
	Status  verdict.Status `json:"status"`
	// Shard is "I/N" when --shard inspected one part of the list; Listed is
	// the list's size before sharding.
	Shard  string       `json:"shard,omitempty"`
	Listed int          `json:"listed,omitempty"`
	Models []*TriageRow `json:"models"`
	// Map is the list judged as the tree's map (JudgeMap); its FAIL is the
	// list's.
	Map *TreeMap `json:"tree_map,omitempty"`
}

// TriageRow is one model's report plus what the later phases will meet.
type TriageRow struct {
	*report.Report
	Source string `json:"source"` // "argument 2", "hf_models.txt:14"
	// Parameters and BF16Bytes are from the tensor headers; ReferenceBytes is
	// the estimated peak memory of phase0's Python stages (preflight.Memory).
	Parameters     int64    `json:"parameters"`
	BF16Bytes      int64    `json:"bf16_bytes"`
	ReferenceBytes int64    `json:"reference_bytes"`
	LaterPhases    []string `json:"later_phases"`
}

// InspectMany inspects entries concurrently, at most limit at once.
func InspectMany(ctx context.Context, s *orchestrator.Settings, entries []modellist.Entry, version string, limit int) *Triage {
	rows, _ := parallel.Map(ctx, entries, max(limit, 1), func(ctx context.Context, _ int, e modellist.Entry) *TriageRow {
		quiet := *s
		quiet.Progress = nil // interleaved stage lines from parallel models would be unreadable
		quiet.ProgressBars = false
		r, m := orchestrator.InspectSized(ctx, &quiet, e.Arg, version)
		row := &TriageRow{Report: r, Source: e.Source, LaterPhases: []string{}}
		if m != nil {
			row.Parameters, row.BF16Bytes, row.ReferenceBytes = m.Parameters, m.Weights, m.Peak
		}
		row.LaterPhases = laterPhases(r)
		return row
	})
	t := &Triage{Tool: "phase0", Version: version, Status: verdict.Pass, Models: []*TriageRow{}}
	for i, row := range rows {
		if row == nil { // not started: the context ended first
			row = &TriageRow{Report: orchestrator.ErrorReport("inspect", entries[i].Arg, version, fmt.Errorf("%w before it started", chain.ErrInterrupted)), Source: entries[i].Source, LaterPhases: []string{}}
		}
		t.Models = append(t.Models, row)
		t.Status = verdict.Worst(t.Status, row.Status)
	}
	return t
}

// laterPhases lists what Phases 1–7 will meet for a model that passed the
// architecture gate.
func laterPhases(r *report.Report) []string {
	c := r.Config
	if c == nil {
		return []string{}
	}
	var out []string
	if c.QKVBias {
		out = append(out, "qkv_bias (applied on the host around the bias-free kernels)")
	}
	if c.QKNorm {
		out = append(out, "qk_norm")
	}
	if c.NHeads*c.HeadDim != c.EmbDim {
		out = append(out, fmt.Sprintf("head_dim %d != emb_dim/n_heads %d", c.HeadDim, c.EmbDim/c.NHeads))
	}
	var odd []string
	for _, d := range []struct {
		name string
		v    int
	}{{"emb_dim", c.EmbDim}, {"hidden_dim", c.HiddenDim}, {"q_dim", c.NHeads * c.HeadDim}, {"kv_dim", c.NKVHeads * c.HeadDim}} {
		if d.v%1024 != 0 {
			odd = append(odd, fmt.Sprintf("%s %d", d.name, d.v))
		}
	}
	if len(odd) > 0 {
		out = append(out, "not multiples of 1024 (Phase 2 padding): "+strings.Join(odd, ", "))
	}
	if c.TieWordEmbeddings {
		out = append(out, "tied embeddings")
	}
	if c.RopeScaling != nil {
		out = append(out, "rope scaling "+c.RopeScaling.RopeType)
	}
	return out
}

// SetMap adds the tree map's verdict to the list's.
func (t *Triage) SetMap(m *TreeMap) {
	t.Map = m
	if m != nil {
		t.Status = verdict.Worst(t.Status, m.Status)
	}
}

// ExitCode is the worst model's exit code, or the tree map's (130 when
// interrupted).
func (t *Triage) ExitCode() int {
	code := t.Map.exitCode()
	for _, m := range t.Models {
		code = max(code, orchestrator.ExitCode(m.Report))
	}
	return code
}

// Text is the list's table (report.InspectListText).
func (t *Triage) Text() string {
	rows := make([]report.InspectRow, len(t.Models))
	for i, m := range t.Models {
		rows[i] = report.InspectRow{ListRow: report.ListRow{Report: m.Report, ListedAt: m.Source}, Parameters: m.Parameters,
			BF16Bytes: m.BF16Bytes, ReferenceBytes: m.ReferenceBytes, LaterPhases: m.LaterPhases}
	}
	text := report.InspectListText(rows, report.ListTotals{Status: t.Status, Shard: t.Shard, Listed: t.Listed})
	if t.Map != nil {
		text += "\n" + t.Map.Text()
	}
	return text
}
