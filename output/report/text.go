package report

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"phase0/gate/baseline"
	"phase0/gate/verdict"
	"phase0/read/model"
)

// Text renders the short human verdict table.
func (r *Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase0 %s %s: %s\n", r.Command, r.Model, r.Status)
	if u := r.ReusedFrom; u != nil {
		fmt.Fprintf(&b, "  reused: inputs unchanged since %s, verdict from %s (--fresh runs everything)\n", u.Recorded.Format(time.RFC3339), u.Path)
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "  error: %s\n", r.Error)
	}
	b.WriteString(r.Quantized.keyLine())
	if r.ModelDir != "" {
		fmt.Fprintf(&b, "  model dir: %s", r.ModelDir)
		if r.Revision != "" {
			fmt.Fprintf(&b, " (revision %s)", r.Revision)
		}
		if r.Source != "" {
			fmt.Fprintf(&b, " (%s)", r.Source)
		}
		b.WriteString("\n")
	}
	if r.Architecture != "" {
		fmt.Fprintf(&b, "  architecture: %s  family: %s\n", r.Architecture, OrDash(r.Family))
	}
	if c := r.Config; c != nil {
		fmt.Fprintf(&b, "  config: %s\n", ConfigLine(c))
	}
	if w := r.Workspace; w != nil {
		fmt.Fprintf(&b, "  workspace: %s (%s)\n", w.Dir, w.modeText())
		for _, f := range w.Foreign {
			fmt.Fprintf(&b, "  kept as found: %s\n", f)
		}
		switch {
		case w.RecordDir != "" && w.ReportMD != "" && len(w.Entered) > 0:
			fmt.Fprintf(&b, "  record (outside the folder): %s\n", w.ReportMD)
			fmt.Fprintf(&b, "  written into the folder: %s (its Phase 0 entry and tick, nothing else)\n", strings.Join(w.Entered, ", "))
		case w.RecordDir != "" && w.ReportMD != "":
			fmt.Fprintf(&b, "  record (outside the folder, which phase0 left as it was): %s\n", w.ReportMD)
		}
	}
	for _, rej := range r.Rejections {
		fmt.Fprintf(&b, "  rejected [%s]: %s\n", rej.Code, rej.Message)
	}
	if rows := r.Gates.Rows(); len(rows) > 0 {
		tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "\n  GATE\tSTATUS\tDETAIL")
		for _, g := range rows {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", g.Title, g.Section.Status, g.Section.Summary)
		}
		tw.Flush()
	}
	b.WriteString(r.findings())
	b.WriteString(r.Reference.text())
	if r.Preflight != nil {
		b.WriteString("\n  machine readiness (informational):\n")
		for _, line := range strings.Split(strings.TrimRight(r.Preflight.Text(), "\n"), "\n") {
			b.WriteString("  " + line + "\n")
		}
	}
	b.WriteString(r.keysText())
	return b.String()
}

// findings lists what failed, one line each, capped so a broken 8B checkpoint
// does not print thousands of lines (the JSON report has more of them).
func (r *Report) findings() string {
	var lines []string
	for _, g := range r.Gates.Rows() {
		if g.Section.Status != verdict.Pass {
			lines = append(lines, g.Section.AllFindings()...)
		}
	}
	var b strings.Builder
	const max = 20
	for i, l := range lines {
		if i == max {
			fmt.Fprintf(&b, "  … %d more (see --json)\n", len(lines)-max)
			break
		}
		fmt.Fprintf(&b, "  ✗ %s\n", l)
	}
	warnings := append([]string{}, r.Warnings...)
	if g := r.Gates.Weights; g != nil {
		warnings = append(warnings, g.Warnings...)
	}
	if g := r.Gates.ConfigConsistency; g != nil {
		warnings = append(warnings, g.Notes...)
	}
	if g := r.Gates.HFBaseline; g != nil {
		warnings = append(warnings, g.Warnings...)
	}
	for _, w := range warnings {
		fmt.Fprintf(&b, "  ! %s\n", w)
	}
	if g := r.Gates.HFBaseline; g != nil && g.Decode != nil {
		fmt.Fprintf(&b, "  continuation: %q\n", g.Decode.Text)
	}
	if g := r.Gates.HFBaseline; g != nil && g.Calibration != nil {
		fmt.Fprintf(&b, "  %s\n", CalibrationLine(g.Calibration))
	}
	return b.String()
}

// ConfigLine is the one-line resolved config used in reports and TODO.md.
func ConfigLine(c *model.Config) string {
	rs := "none"
	if c.RopeScaling != nil {
		rs = fmt.Sprintf("%s(factor=%g)", c.RopeScaling.RopeType, c.RopeScaling.Factor)
	}
	return fmt.Sprintf("n_layers=%d emb_dim=%d n_heads=%d n_kv_heads=%d head_dim=%d hidden_dim=%d vocab_size=%d rope_base=%g rope_scaling=%s rms_norm_eps=%g tie_word_embeddings=%v qkv_bias=%v qk_norm=%v",
		c.NLayers, c.EmbDim, c.NHeads, c.NKVHeads, c.HeadDim, c.HiddenDim, c.VocabSize, c.RopeBase, rs, c.RMSNormEps, c.TieWordEmbeddings, c.QKVBias, c.QKNorm)
}

// OrDash is s, or "-" for an empty field or table cell (every rendering, and
// the orchestrator's tables, show one the same way).
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// CalibrationLine is the one-line account of the perplexity rule that every
// report format shows.
func CalibrationLine(c *baseline.Calibration) string {
	verdict := "within"
	if !c.Pass {
		verdict = "ABOVE"
	}
	return fmt.Sprintf("calibration passage (%d tokens, %d predicted): perplexity %.4g, %s the limit %.4g = %g × V %d (ratio perplexity/V %.3g); passage %q",
		c.Tokens, c.Predicted, c.Perplexity, verdict, c.Limit, c.MaxRatio, c.VocabSize, c.Ratio, c.Passage)
}
