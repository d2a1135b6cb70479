package orchestrator

import (
	"fmt"
	"phase0/model"
	"strings"
	"text/tabwriter"
)

// Text renders the short human verdict table.
func (r *Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase0 %s %s: %s\n", r.Command, r.Model, r.Status)
	if r.Error != "" {
		fmt.Fprintf(&b, "  error: %s\n", r.Error)
	}
	if r.ModelDir != "" {
		fmt.Fprintf(&b, "  model dir: %s", r.ModelDir)
		if r.Revision != "" {
			fmt.Fprintf(&b, " (revision %s)", r.Revision)
		}
		b.WriteString("\n")
	}
	if r.Architecture != "" {
		fmt.Fprintf(&b, "  architecture: %s  family: %s\n", r.Architecture, orDash(r.Family))
	}
	if c := r.Config; c != nil {
		fmt.Fprintf(&b, "  config: %s\n", ConfigLine(c))
	}
	for _, rej := range r.Rejections {
		fmt.Fprintf(&b, "  rejected [%s]: %s\n", rej.Code, rej.Message)
	}
	g := r.Gates
	if g.Weights == nil && g.PyWeights == nil && g.ConfigConsistency == nil && g.HFBaseline == nil {
		b.WriteString(r.findings())
		return b.String()
	}
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\n  GATE\tSTATUS\tDETAIL")
	if g := r.Gates.Weights; g != nil {
		detail := fmt.Sprintf("%d tensors, %d missing, %d unexpected, %d mismatched", g.Tensors, len(g.Missing), len(g.Unexpected), len(g.Mismatched))
		if g.Scanned {
			detail += fmt.Sprintf(", %d with NaN/Inf", len(g.NonFinite))
		}
		fmt.Fprintf(tw, "  weights (native)\t%s\t%s\n", g.Status, detail)
	}
	if g := r.Gates.PyWeights; g != nil {
		fmt.Fprintf(tw, "  weights (python)\t%s\t%d layers, %d tensors loaded, %d problems\n", g.Status, g.Layers, g.Tensors, len(g.Problems))
	}
	if g := r.Gates.ConfigConsistency; g != nil {
		fmt.Fprintf(tw, "  config consistency\t%s\t%d checks, %d mismatches\n", g.Status, len(g.Checked), len(g.Mismatches))
	}
	if g := r.Gates.HFBaseline; g != nil {
		detail := fmt.Sprintf("top-1 %d %q p=%.3f, entropy %.2f nats, %s runner", g.Top1Token, g.Top1Text, g.Logits.Top1Prob, g.Logits.Entropy, orDash(g.Runner))
		fmt.Fprintf(tw, "  hf bf16 baseline\t%s\t%s\n", g.Status, detail)
	}
	tw.Flush()
	b.WriteString(r.findings())
	return b.String()
}

// findings lists what failed, one line each, capped so a broken 8B checkpoint
// does not print thousands of lines (the JSON report has all of them).
func (r *Report) findings() string {
	var lines []string
	if g := r.Gates.Weights; g != nil {
		lines = append(lines, g.Errors...)
		for _, m := range g.Missing {
			lines = append(lines, "missing tensor "+m)
		}
		for _, m := range g.Unexpected {
			lines = append(lines, "unexpected tensor "+m)
		}
		for _, m := range g.Mismatched {
			lines = append(lines, fmt.Sprintf("%s: expected %s, found %s", m.Name, m.Expected, m.Actual))
		}
		for _, n := range g.NonFinite {
			lines = append(lines, fmt.Sprintf("%s: %d NaN, %d Inf", n.Name, n.NaN, n.Inf))
		}
	}
	if g := r.Gates.PyWeights; g != nil {
		lines = append(lines, g.Problems...)
	}
	if g := r.Gates.ConfigConsistency; g != nil {
		for _, m := range g.Mismatches {
			lines = append(lines, fmt.Sprintf("config %s: %s", m.Field, m.Message))
		}
	}
	if g := r.Gates.HFBaseline; g != nil {
		for _, s := range g.Reasons {
			lines = append(lines, "baseline: "+s)
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
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "  ! %s\n", w)
	}
	if g := r.Gates.Weights; g != nil {
		for _, w := range g.Warnings {
			fmt.Fprintf(&b, "  ! %s\n", w)
		}
	}
	if g := r.Gates.HFBaseline; g != nil {
		for _, w := range g.Warnings {
			fmt.Fprintf(&b, "  ! %s\n", w)
		}
		if g.Decode != nil {
			fmt.Fprintf(&b, "  continuation: %q\n", g.Decode.Text)
		}
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

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
