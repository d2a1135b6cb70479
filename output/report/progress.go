package report

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"phase0/gate/verdict"
	"phase0/output/scaffold"
	"phase0/read/model"
)

// ProgressEntry is the Phase 0 entry for progress.md.
// It names the model as the generated files do (spec), never by a local path;
// findsCheckpoint says whether the weights module defines default_checkpoint()
// (phase0's do; upstream's hand-written ones do not); defaultArg is the
// argument that names phase0's default model, never shown as how the model
// was given.
func ProgressEntry(r *Report, c *model.Config, spec scaffold.Spec, llms string, findsCheckpoint bool, defaultArg string) string {
	b := r.Gates.HFBaseline
	var sb strings.Builder
	fmt.Fprintf(&sb, "## Phase 0: Build CPU Reference — PASS (%s)\n\n", r.Started.Format("2006-01-02"))
	if spec.OnHub {
		fmt.Fprintf(&sb, "- HF model: `%s`", spec.ModelID)
		if r.Model != spec.ModelID && r.Model != defaultArg && !strings.HasPrefix(r.Model, spec.ModelID+"@") {
			fmt.Fprintf(&sb, " (given as `%s`)", r.Model)
		}
	} else {
		fmt.Fprintf(&sb, "- Local checkpoint: `%s`", spec.ModelID)
		if findsCheckpoint {
			fmt.Fprintf(&sb, " (`default_checkpoint()` in `%s_weights.py` finds it)", spec.Name)
		}
	}
	if spec.Revision != "" {
		fmt.Fprintf(&sb, " at revision `%s`", spec.Revision)
	}
	if spec.Source != "" {
		fmt.Fprintf(&sb, ", validated weights: %s", spec.Source)
	}
	fmt.Fprintf(&sb, " (%s, %s family)\n", r.Architecture, r.Family)
	fmt.Fprintf(&sb, "- Resolved config: n_layers=%d, emb_dim=%d, n_heads=%d, n_kv_heads=%d, head_dim=%d, hidden_dim=%d, vocab_size=%d, rope_base=%g, tie_word_embeddings=%v\n",
		c.NLayers, c.EmbDim, c.NHeads, c.NKVHeads, c.HeadDim, c.HiddenDim, c.VocabSize, c.RopeBase, c.TieWordEmbeddings)
	rs := "none (plain RoPE)"
	if c.RopeScaling != nil {
		rs = fmt.Sprintf("%s, factor %g", c.RopeScaling.RopeType, c.RopeScaling.Factor)
		if c.RopeScaling.RopeType == "llama3" {
			rs += fmt.Sprintf(", low_freq_factor %g, high_freq_factor %g, original_max_position_embeddings %d", c.RopeScaling.LowFreqFactor, c.RopeScaling.HighFreqFactor, c.RopeScaling.OriginalMaxPositionEmbeddings)
		}
	}
	fmt.Fprintf(&sb, "- rms_norm_eps=%g, rope scaling: %s, qkv_bias=%v, qk_norm=%v\n", c.RMSNormEps, rs, c.QKVBias, c.QKNorm)
	if len(r.Defaulted) > 0 {
		var d []string
		for _, x := range r.Defaulted {
			d = append(d, fmt.Sprintf("%s=%v (%s)", x.Field, x.Value, x.Source))
		}
		fmt.Fprintf(&sb, "- Defaulted (absent from config.json): %s\n", strings.Join(d, "; "))
	}
	if r.Workspace.Mode == ModeValidatedExisting {
		fmt.Fprintf(&sb, "- Workspace: validated existing `%s_weights.py` (not written by phase0; nothing generated over it)\n", r.Workspace.Name)
	} else {
		fmt.Fprintf(&sb, "- cpu_helpers kept: %s\n", strings.Join(r.Workspace.HelpersKept, ", "))
	}
	fmt.Fprintf(&sb, "- Gates: weights %s (%d tensors), config consistency %s (%d checks), HF bf16 baseline %s\n",
		r.Gates.Weights.Status, r.Gates.Weights.Tensors, r.Gates.ConfigConsistency.Status, len(r.Gates.ConfigConsistency.Checked), b.Status)
	fmt.Fprintf(&sb, "- Canonical prompt (%s, %s runner `%s`): %q → token ids %v\n", b.PromptStyle, b.Runner, runnerShown(b.RunnerPath, llms), b.Prompt, b.Tokens)
	fmt.Fprintf(&sb, "- Top-1: id %d %q (p=%.4f); logits OK: n=%d, NaN=%d, Inf=%d, min=%.3f, max=%.3f, mean=%.3f, std=%.3f, entropy=%.3f nats\n",
		b.Top1Token, b.Top1Text, b.Logits.Top1Prob, b.Logits.N, b.Logits.NaN, b.Logits.Inf, b.Logits.Min, b.Logits.Max, b.Logits.Mean, b.Logits.Std, b.Logits.Entropy)
	if b.Calibration != nil {
		fmt.Fprintf(&sb, "- %s\n", CalibrationLine(b.Calibration))
	}
	fmt.Fprintf(&sb, "- Tool: phase0 %s (torch %s, transformers %s), %s\n", r.Version, b.Torch, b.Transformers, r.Started.Format(time.RFC3339))
	sb.WriteString(referenceProgressLine(r.Reference, r.Workspace != nil && r.Workspace.RecordDir != ""))
	return sb.String()
}

// runnerShown is the runner's path as progress.md shows it: relative to the
// llms folder for upstream's runner, the file name for the bundled one.
func runnerShown(path, llms string) string {
	if rel, err := filepath.Rel(llms, path); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return filepath.Base(path)
}

// referenceProgressLine is the progress.md line naming the reference ("" when none
// was made). progress.md is committed, so it names the folder relative to
// the workspace, never by its absolute path.
func referenceProgressLine(r *Reference, outside bool) string {
	if r == nil || r.Status != verdict.Pass {
		return ""
	}
	if outside {
		return fmt.Sprintf("- Reference for the later phases: recorded outside this folder, in phase0's record of it (%s; key `%s`; `phase0 run` prints where)\n",
			r.Describe(), r.KeySHA256[:12])
	}
	return fmt.Sprintf("- Reference for the later phases: `reference/` (%s; key `%s`); judge a runner with `phase0 compare <workspace>/reference CANDIDATE`\n",
		r.Describe(), r.KeySHA256[:12])
}

// Blockers lists why Phase 0 failed, for TODO.md's Active blockers.
func Blockers(r *Report) []string {
	var out []string
	for _, g := range r.Gates.Rows() {
		if !g.Section.Status.Failed() {
			continue
		}
		for _, f := range g.Section.AllFindings()[:min(5, len(g.Section.AllFindings()))] {
			out = append(out, g.Title+": "+f)
		}
	}
	for i, b := range out {
		out[i] = strings.ReplaceAll(b, "\n", " ")
	}
	return out
}
