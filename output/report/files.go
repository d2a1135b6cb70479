package report

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"phase0/gate/baseline"
	"phase0/internal/atomicfile"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Write writes report.json, report.md and the top-10 chart into dir and
// records their paths in the report's workspace section.
func Write(r *Report, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating report folder: %w", err)
	}
	files, err := Files(r, dir)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := atomicfile.Write(f.Path, f.Data); err != nil {
			return err
		}
	}
	return nil
}

// File is one file of a record: its path and its bytes.
type File struct {
	Path string
	Data []byte
}

// topChartName is the file name of gate 2's top-10 chart.
const topChartName = "top10.png"

// FileNames are the names of every file Files may render into a record
// folder, whichever of them a report has.
func FileNames() []string {
	return []string{"report.json", "report.md", topChartName, layersChart}
}

// Files renders what Write writes into dir, without writing it: the chart
// (when the baseline has a top-10), report.json, report.md. It records
// their paths in the report's workspace section.
func Files(r *Report, dir string) ([]File, error) {
	jsonPath, mdPath := filepath.Join(dir, "report.json"), filepath.Join(dir, "report.md")
	if r.Workspace != nil {
		r.Workspace.ReportJSON, r.Workspace.ReportMD = jsonPath, mdPath
	}
	var out []File
	chart := ""
	if b := r.Gates.HFBaseline; b != nil && len(b.Top10) > 0 {
		png, err := topChart(b)
		if err != nil {
			return nil, err
		}
		out = append(out, File{filepath.Join(dir, topChartName), markChart(png)})
		chart = topChartName
	}
	if e := r.Gates.QuantE2E; e != nil && e.Twin != nil && len(e.Twin.Bundle.HiddenCosine) > 0 && len(e.Twin.Bundle.HiddenCosine) == len(e.Twin.Twin.HiddenCosine) {
		png, err := cosineChart(e)
		if err != nil {
			return nil, err
		}
		out = append(out, File{filepath.Join(dir, layersChart), markChart(png)})
	}
	js, err := r.JSON()
	if err != nil {
		return nil, err
	}
	return append(out, File{jsonPath, append(js, '\n')}, File{mdPath, []byte(r.Markdown(chart))}), nil
}

// ChartMark is in the first bytes of every chart phase0 writes (a PNG
// tEXt chunk "Software: phase0" right after the image header): what tells
// phase0's chart from a person's file of the same name (output/record).
const ChartMark = "tEXtSoftware\x00phase0"

// markChart puts ChartMark into png, after its signature and IHDR chunk
// (8 + 25 bytes); a chunk is its data's length, its type and data, and
// the CRC-32 of type and data.
func markChart(png []byte) []byte {
	const head = 8 + 25
	if len(png) < head {
		return png
	}
	body := []byte(ChartMark)
	chunk := binary.BigEndian.AppendUint32(nil, uint32(len(body)-4))
	chunk = append(chunk, body...)
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(body))
	return append(append(append([]byte{}, png[:head]...), chunk...), png[head:]...)
}

// topChart draws the top-10 next-token probabilities as a PNG bar chart.
func topChart(b *baseline.Baseline) ([]byte, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Next-token probabilities after %q", truncate(b.Prompt, 48))
	p.Y.Label.Text = "probability"
	vals := make(plotter.Values, len(b.Top10))
	names := make([]string, len(b.Top10))
	for i, t := range b.Top10 {
		vals[i] = t.Prob
		names[i] = fmt.Sprintf("%q\n%d", truncate(t.Text, 10), t.ID)
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(28))
	if err != nil {
		return nil, fmt.Errorf("top-10 chart: %w", err)
	}
	bars.Color = color.RGBA{R: 52, G: 101, B: 164, A: 255}
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalX(names...)
	p.Y.Min = 0
	w, err := p.WriterTo(9*vg.Inch, 4*vg.Inch, "png")
	if err != nil {
		return nil, fmt.Errorf("top-10 chart: %w", err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("top-10 chart: %w", err)
	}
	return buf.Bytes(), nil
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Markdown renders the human report; chart is the PNG's file name or "".
func (r *Report) Markdown(chart string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Phase 0 report: %s — %s\n\n", r.Model, r.Status)
	fmt.Fprintf(&b, "phase0 %s, %s, %.1f s\n\n", r.Version, r.Started.Format("2006-01-02 15:04 UTC"), r.Seconds)
	if r.Error != "" {
		fmt.Fprintf(&b, "**Error:** %s\n\n", r.Error)
	}
	fmt.Fprintf(&b, "| | |\n|---|---|\n| Model folder | `%s` |\n", r.ModelDir)
	if r.Revision != "" {
		fmt.Fprintf(&b, "| Revision | `%s` |\n", r.Revision)
	}
	if r.Source != "" {
		fmt.Fprintf(&b, "| Source | %s |\n", r.Source)
	}
	fmt.Fprintf(&b, "| Architecture | %s (%s) |\n", r.Architecture, OrDash(r.Family))
	if r.Config != nil {
		fmt.Fprintf(&b, "| Config | %s |\n", ConfigLine(r.Config))
	}
	if r.Workspace != nil {
		helpers := ""
		if len(r.Workspace.HelpersKept) > 0 {
			helpers = " (helpers kept: " + strings.Join(r.Workspace.HelpersKept, ", ") + ")"
		}
		fmt.Fprintf(&b, "| Workspace | `%s` — %s%s |\n", r.Workspace.Dir, r.Workspace.modeText(), helpers)
		for _, f := range r.Workspace.Foreign {
			fmt.Fprintf(&b, "| Kept as found | `%s` |\n", f)
		}
	}
	b.WriteString("\n## Gates\n\n| Gate | Status | Detail |\n|---|---|---|\n")
	for _, g := range r.Gates.Rows() {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", g.Title, g.Section.Status, strings.ReplaceAll(g.Section.Summary, "|", "\\|"))
	}
	if f := r.findings(); f != "" {
		b.WriteString("\n## Findings\n\n```\n" + f + "```\n")
	}
	if g := r.Gates.HFBaseline; g != nil && len(g.Tokens) > 0 {
		fmt.Fprintf(&b, "\n## Baseline\n\nPrompt (%s, %s runner): %q\n\nToken ids: `%v`\n\n", g.PromptStyle, g.Runner, g.Prompt, g.Tokens)
		b.WriteString("| Rank | Id | Text | Probability |\n|---|---|---|---|\n")
		for i, t := range g.Top10 {
			fmt.Fprintf(&b, "| %d | %d | `%q` | %.4f |\n", i+1, t.ID, t.Text, t.Prob)
		}
		l := g.Logits
		fmt.Fprintf(&b, "\nLogits: n=%d, NaN=%d, Inf=%d, min=%.3f, max=%.3f, mean=%.3f, std=%.3f, entropy=%.3f of max %.3f nats\n", l.N, l.NaN, l.Inf, l.Min, l.Max, l.Mean, l.Std, l.Entropy, l.MaxEntr)
		if c := g.Calibration; c != nil {
			fmt.Fprintf(&b, "\nCalibration passage (%d tokens, %d predicted): %q\n\n| Perplexity | Limit | V | Max ratio | Perplexity / V |\n|---|---|---|---|---|\n| %.4g | %.4g | %d | %g | %.3g |\n",
				c.Tokens, c.Predicted, c.Passage, c.Perplexity, c.Limit, c.VocabSize, c.MaxRatio, c.Ratio)
		}
		if chart != "" {
			fmt.Fprintf(&b, "\n![top-10 next-token probabilities](%s)\n", chart)
		}
	}
	layers := ""
	if chart != "" {
		layers = layersChart
	}
	b.WriteString(quantE2EMarkdown(r.Gates.QuantE2E, layers))
	b.WriteString(r.Reference.markdown())
	b.WriteString("\n## Stages\n\n| Stage | Status | Seconds |\n|---|---|---|\n")
	for _, st := range r.Stages {
		fmt.Fprintf(&b, "| %s | %s | %.2f |\n", st.Name, st.Status, st.Seconds)
	}
	return b.String()
}
