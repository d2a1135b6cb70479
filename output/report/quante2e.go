package report

import (
	"bytes"
	"fmt"
	"image/color"
	"strings"

	"phase0/gate/quant"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// layersChart is the file name of quantized gate 2's per-layer plot.
const layersChart = "hidden_cosine.png"

// quantE2EMarkdown is quantized gate 2's section of report.md: the bundle
// beside its twin (the KL tails, top-1 agreement, Δp, perplexity), the
// paired rules, and the per-layer hidden-state cosines as a table (and the
// plot, when chart names it). "" when the gate has no twin comparison.
func quantE2EMarkdown(e *quant.EndToEnd, chart string) string {
	if e == nil || e.Twin == nil {
		return ""
	}
	c := e.Twin
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Quantized end to end: %s against its twin\n\n", e.Format)
	fmt.Fprintf(&b, "The twin is the reference's own projections through the format's rule (%s) and back, prefilled in the same model: what a plain 4-bit quantization of this reference costs. Per-token figures over the passage's %d tokens.\n\n", c.Rule, c.Tokens)
	b.WriteString("| | KL mean | median | p90 | p99 | max | top-1 agrees | Δp RMS | Δp max | perplexity ratio |\n|---|---|---|---|---|---|---|---|---|---|\n")
	row := func(name string, s quant.SideFigures) {
		fmt.Fprintf(&b, "| %s | %.4g | %.4g | %.4g | %.4g | %.4g | %.1f %% | %.4g | %.4g | %.4g |\n",
			name, s.KL.Mean, s.KL.Median, s.KL.P90, s.KL.P99, s.KL.Max, 100*s.Top1Agreement, s.DeltaPRMS, s.DeltaPMax, s.PerplexityRatio)
	}
	row("bundle", c.Bundle)
	row("twin", c.Twin)
	b.WriteString("\n| Paired rule (bundle − twin) | Mean difference | SE | Allowed | Outcome |\n|---|---|---|---|---|\n")
	for _, r := range []quant.PairedRule{c.KL, c.NLL, c.Top1} {
		outcome := "within"
		if r.Failed {
			outcome = "**worse**"
		}
		fmt.Fprintf(&b, "| %s | %.4g | %.3g | %.4g | %s |\n", r.Name, r.Difference, r.SE, r.Margin, outcome)
	}
	fmt.Fprintf(&b, "\nBackstop (absolute, for a twin that is itself broken): mean KL ≤ %g nats, perplexity ratio ≤ %g.\n", e.Limits.MaxKL, e.Limits.MaxPerplexityRatio)
	if n := len(c.Bundle.HiddenCosine); n > 0 && n == len(c.Twin.HiddenCosine) {
		b.WriteString("\nHidden-state cosine with the source checkpoint on the prompt, per decoder layer")
		if p := c.PartsAt; p != nil {
			fmt.Fprintf(&b, " (they first part at layer %d)", p.Layer)
		}
		b.WriteString(":\n\n| Layer | Bundle | Twin | |\n|---|---|---|---|\n")
		for k := range n {
			mark := ""
			if p := c.PartsAt; p != nil && p.Layer == k {
				mark = "← parts"
			}
			fmt.Fprintf(&b, "| %d | %.4f | %.4f | %s |\n", k, c.Bundle.HiddenCosine[k], c.Twin.HiddenCosine[k], mark)
		}
		if chart != "" {
			fmt.Fprintf(&b, "\n![hidden-state cosine per layer, bundle and twin](%s)\n", chart)
		}
	}
	return b.String()
}

// cosineChart draws the per-layer hidden-state cosines of the bundle and
// the twin as a PNG line plot.
func cosineChart(e *quant.EndToEnd) ([]byte, error) {
	c := e.Twin
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Hidden-state cosine with bf16 per layer: %s bundle and its twin", e.Format)
	p.X.Label.Text = "decoder layer"
	p.Y.Label.Text = "cosine"
	for i, s := range []struct {
		name string
		ys   []float64
		col  color.RGBA
	}{{"bundle", c.Bundle.HiddenCosine, color.RGBA{R: 204, G: 0, B: 0, A: 255}}, {"twin", c.Twin.HiddenCosine, color.RGBA{R: 52, G: 101, B: 164, A: 255}}} {
		pts := make(plotter.XYs, len(s.ys))
		for k, y := range s.ys {
			pts[k] = plotter.XY{X: float64(k), Y: y}
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("hidden-state chart: %w", err)
		}
		line.Color, points.Color = s.col, s.col
		if i == 1 {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(line, points)
		p.Legend.Add(s.name, line, points)
	}
	p.Y.Max = 1
	w, err := p.WriterTo(7*vg.Inch, 3.5*vg.Inch, "png")
	if err != nil {
		return nil, fmt.Errorf("hidden-state chart: %w", err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("hidden-state chart: %w", err)
	}
	return buf.Bytes(), nil
}
