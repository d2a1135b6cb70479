package compare

import (
	"fmt"
	"strings"
)

// Text is the human rendering: the verdict, one line per prompt, the layer table.
func (r *Result) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase0 compare: %s\n  reference: %s (%s)\n  candidate: %s (%s)\n  %s\n", r.Status, r.Reference, r.ReferenceRunner, r.Candidate, r.CandidateRunner, r.Summary)
	if len(r.Checks) > 0 {
		b.WriteString("\nTop-k lockstep gate (per prompt):\n")
	}
	for _, c := range r.Checks {
		line := fmt.Sprintf("  %-4s #%d %q: ", c.Status, c.Prompt, clip(c.Text, 48))
		switch {
		case c.Reason != "":
			line += c.Reason
		case c.Divergent == nil:
			line += fmt.Sprintf("all %d steps identical", c.Steps)
		default:
			line += fmt.Sprintf("diverges at step %d: candidate %d (rank %d in reference top-%d), reference %d (rank %d in candidate top-%d)",
				*c.Divergent, *c.CandidateChosen, *c.CandidateRankInRef, c.K, *c.ReferenceChosen, *c.ReferenceRankInCan, c.K)
		}
		b.WriteString(line + "\n")
	}
	if len(r.Layers) > 0 {
		b.WriteString("\nPer-layer diagnosis (canonical prompt; informational):\n")
		b.WriteString("  layer  probe                cos min    cos p5   cos med  cos mean    max abs   mean abs\n")
		for _, l := range r.Layers {
			layer := "   -"
			if l.Layer != nil {
				layer = fmt.Sprintf("%4d", *l.Layer)
			}
			if l.Note != "" {
				fmt.Fprintf(&b, "  %s   %-19s  %s\n", layer, l.Name, l.Note)
				continue
			}
			fmt.Fprintf(&b, "  %s   %-19s %8.5f %9.5f %9.5f %9.5f %10.4g %10.4g\n", layer, l.Name, l.CosMin, l.CosP5, l.CosMedian, l.CosMean, l.MaxAbs, l.MeanAbs)
		}
	}
	return b.String()
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
