package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"phase0/configgate"
	"phase0/internal/atomicfile"
	"phase0/internal/boundedfile"
	"phase0/model"
	"phase0/ops"
	"phase0/report"
	"phase0/scaffold"
	"phase0/verdict"
	"phase0/weights"
)

// Run is all of Phase 0 for one model.
func Run(ctx context.Context, s *Settings, modelArg, version string) *report.Report {
	uses, err := quantizedUses(s, modelArg)
	if err != nil {
		return runWith(ctx, inputs{s: s, command: "run", arg: modelArg, version: version, routeErr: err}, []stage{stepRoute})
	}
	if len(uses) > 0 {
		return runQuantized(ctx, s, modelArg, version, uses)
	}
	return runChain(ctx, s, "run", modelArg, version, withoutSkippedScan(runStages, s))
}

// loaded is the python_weights stage's result: gate 1 through the
// generated loader, and the loader's lm_head against its embed_table
// (judged in gate 3).
type loaded struct {
	loader *weights.Loader
	tie    *configgate.TieFacts
}

// pythonWeightsStage is gate 1 from the user's side: the generated loader loads the
// real checkpoint in Python, and Go judges what came back.
func pythonWeightsStage(ctx context.Context, st *state) (loaded, outcome, error) {
	src := st.facts.model
	facts, err := st.py().LoaderFacts(ctx, ops.ModuleArgs{WeightsModule: st.weightsModule(), ModelDir: src.Dir})
	if err != nil {
		if stop := workerFailure(err); stop != nil {
			return loaded{}, outcome{}, stop
		}
		l := weights.NewLoader()
		l.Raised(reasons(err))
		return loaded{loader: l}, outcome{status: l.Status, detail: l.Summary}, nil
	}
	l := weights.CheckLoader(st.facts.analysis.Config, &facts.LoaderFacts, st.inv(), src.FS)
	return loaded{loader: l, tie: facts.Tie}, outcome{status: l.Status, detail: l.Summary}, nil
}

// configFactsStage completes gate 3: the generated LlamaConfig() and what
// transformers resolves, each compared with the extracted Config, on a
// copy of the weights stage's cross-check.
func configFactsStage(ctx context.Context, st *state) (*configgate.Consistency, outcome, error) {
	cc := st.sections.crossCheck.Clone()
	cfg, src := st.facts.analysis.Config, st.facts.model
	facts, err := st.py().ConfigFacts(ctx, ops.ModuleArgs{WeightsModule: st.weightsModule(), ModelDir: src.Dir})
	if err != nil {
		if stop := workerFailure(err); stop != nil {
			return nil, outcome{}, stop
		}
		for _, r := range reasons(err) {
			cc.FailWith("config facts: %s", r)
		}
		return cc, outcome{status: cc.Status, detail: cc.Findings[0]}, nil
	}
	if facts.Generated == nil || facts.Transformers == nil {
		return nil, outcome{}, fmt.Errorf("config_facts returned no generated or transformers facts")
	}
	module := filepath.Base(st.weightsModule())
	mod := configgate.Module{File: module, Generated: st.facts.workspace.report.Mode == report.ModeGenerated}
	// From here an error (an interrupt, a worker that died) still keeps
	// what was judged so far: the report of the stopped run shows it.
	if err := errors.Join(cc.Generated(cfg, facts.Generated, mod), cc.Transformers(cfg, facts.Transformers)); err != nil {
		return cc, outcome{}, err
	}
	if err := st.behaviour(ctx, cc, module); err != nil {
		return cc, outcome{}, err
	}
	cc.Tie(cfg, st.facts.tie, st.inv(), src.FS)
	return cc, outcome{status: cc.Status, detail: cc.Summary}, nil
}

// behaviour judges what the module does (its RoPE table, its helpers'
// RMSNorm) against transformers for the checkpoint's config, into cc (gate
// 3). An op that raises is a gate 3 FAIL; only a worker that cannot
// evaluate stops the run.
func (st *state) behaviour(ctx context.Context, cc *configgate.Consistency, module string) error {
	w := st.facts.workspace
	args := ops.BehaviourArgs{WeightsModule: st.weightsModule(), HelpersModule: filepath.Join(w.dir, w.spec.Name+"_cpu_helpers.py"),
		ModelDir: st.facts.model.Dir, MaxSeq: st.in.s.MaxSeq}
	b, err := st.py().BehaviourFacts(ctx, args)
	if err != nil {
		if stop := workerFailure(err); stop != nil {
			return stop
		}
		for _, r := range reasons(err) {
			cc.FailWith("behaviour facts of %s: %s", module, r)
		}
		return nil
	}
	cc.Behaviour(st.facts.analysis.Config, b, module)
	return nil
}

// blockers lists why Phase 0 failed, for TODO.md's Active blockers.
func blockers(r *report.Report) []string {
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

// recordStage writes report.json, report.md and the chart, then Phase 0's
// section of phase_timing.md, then (on PASS) the progress entry, then the
// TODO tick. A record that cannot be written is
// a failed run (exit 2): nothing after the failed write is touched, so a
// ticked Phase 0 always has its report on disk.
func recordStage(_ context.Context, st *state) (*recorded, outcome, error) {
	w, ref := st.facts.workspace, st.facts.model
	id := ref.ID
	if q := st.in.quant; q != nil {
		id = q.Key + "=" + ref.ID // one record per MODEL_CHOICES key
	}
	dir, err := reportDirFor(st.in.s, w.dir, id)
	if err != nil {
		return nil, outcome{}, err
	}
	rec := &recorded{json: filepath.Join(dir, "report.json"), md: filepath.Join(dir, "report.md")}
	timing := filepath.Join(w.dir, "docs", "development_progress", scaffold.PhaseTimingName)
	progress := filepath.Join(w.dir, "docs", "development_progress", "progress.md")
	todo := filepath.Join(w.dir, "TODO.md")
	r := st.reportRecorded(rec)
	if w.foreign {
		out, err := st.recordOutside(r, dir, progress, todo)
		return rec, out, err
	}
	// One commit: every file the record writes must be writable before the
	// first is written, so a folder that refuses one (read-only, immutable,
	// full) leaves the previous record whole rather than a PASS report
	// beside an exit 2.
	targets := []string{rec.json, rec.md, filepath.Join(dir, "top10.png"), timing, progress, todo, filepath.Join(w.dir, scaffold.ManifestName)}
	for _, p := range targets {
		if err := atomicfile.CheckWritable(p); err != nil {
			return rec, outcome{}, fmt.Errorf("recording the result (nothing was written): %w", err)
		}
	}
	if err := report.Write(r, dir); err != nil {
		return rec, outcome{}, fmt.Errorf("recording the result: %w", err)
	}
	blockers := withoutLocalPaths(blockers(r), st)
	err = scaffold.UpsertPhase0Entry(timing, scaffold.Phase0Timing(r.Started, time.Now(), string(r.Status), blockers))
	if err == nil && r.Status == verdict.Pass {
		err = scaffold.UpsertPhase0Entry(progress, progressEntry(r, st.facts.analysis.Config, w.spec, filepath.Dir(w.dir), definesFunc(st.weightsModule(), "default_checkpoint")))
	}
	if err == nil {
		err = scaffold.SetPhase0Status(todo, r.Status == verdict.Pass, blockers)
	}
	if err != nil {
		// Checked writable a moment ago, yet a write failed (the disk
		// filled, a file was locked meanwhile): the report must not stand as
		// a complete PASS. Marking it is best effort; the error stands.
		r.Status, r.Error = verdict.Error, "the record is incomplete: "+err.Error()
		_ = report.Write(r, dir)
		return rec, outcome{}, fmt.Errorf("recording the result: %w", err)
	}
	return rec, pass(rec.md), nil
}

// reportRecorded is the report as the record stage writes it: the run so
// far, naming where it is being written.
func (st *state) reportRecorded(rec *recorded) *report.Report {
	r := st.report()
	if r.Workspace != nil {
		w := *r.Workspace
		w.ReportJSON, w.ReportMD = rec.json, rec.md
		r.Workspace = &w
	}
	return r
}

// recordOutside records a run on a folder phase0 did not create: the
// reports go to dir (outside the folder); the folder gets nothing, except,
// mid-deployment and on PASS, its Phase 0 entry in progress.md and the
// tick in TODO.md. Like recordStage, it checks every target first.
func (st *state) recordOutside(r *report.Report, dir, progress, todo string) (outcome, error) {
	w := st.facts.workspace
	targets := []string{r.Workspace.ReportJSON, r.Workspace.ReportMD, filepath.Join(dir, "top10.png")}
	enter := r.Status == verdict.Pass && midDeployment(w.dir)
	if enter {
		targets = append(targets, progress, todo)
	}
	for _, p := range targets {
		if err := atomicfile.CheckWritable(p); err != nil {
			return outcome{}, fmt.Errorf("recording the result (nothing was written): %w", err)
		}
	}
	if err := report.Write(r, dir); err != nil {
		return outcome{}, fmt.Errorf("recording the result: %w", err)
	}
	detail := r.Workspace.ReportMD + " (outside " + w.dir + ", which is left as it was)"
	if !enter {
		return pass(detail), nil
	}
	err := scaffold.UpsertPhase0Entry(progress, progressEntry(r, st.facts.analysis.Config, w.spec, filepath.Dir(w.dir), definesFunc(st.weightsModule(), "default_checkpoint")))
	if err == nil {
		err = scaffold.SetPhase0Status(todo, true, nil)
	}
	if err != nil {
		r.Status, r.Error = verdict.Error, "the record is incomplete: "+err.Error()
		_ = report.Write(r, dir)
		return outcome{}, fmt.Errorf("recording the result: %w", err)
	}
	return pass(r.Workspace.ReportMD + " (Phase 0 entered in " + w.dir + "'s progress.md and TODO.md)"), nil
}

// progressEntry is the Phase 0 entry for progress.md.
// It names the model as the generated files do (spec), never by a local path;
// findsCheckpoint says whether the weights module defines default_checkpoint()
// (phase0's do; upstream's hand-written ones do not).
func progressEntry(r *report.Report, c *model.Config, spec scaffold.Spec, llms string, findsCheckpoint bool) string {
	b := r.Gates.HFBaseline
	var sb strings.Builder
	fmt.Fprintf(&sb, "## Phase 0: Build CPU Reference — PASS (%s)\n\n", r.Started.Format("2006-01-02"))
	if spec.OnHub {
		fmt.Fprintf(&sb, "- HF model: `%s`", spec.ModelID)
		if r.Model != spec.ModelID && r.Model != DefaultModel && !strings.HasPrefix(r.Model, spec.ModelID+"@") {
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
	if r.Workspace.Mode == report.ModeValidatedExisting {
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
		fmt.Fprintf(&sb, "- %s\n", report.CalibrationLine(b.Calibration))
	}
	fmt.Fprintf(&sb, "- Tool: phase0 %s (torch %s, transformers %s), %s\n", r.Version, b.Torch, b.Transformers, r.Started.Format(time.RFC3339))
	sb.WriteString(referenceProgressLine(r.Reference, r.Workspace != nil && r.Workspace.RecordDir != ""))
	return sb.String()
}

// definesFunc reports whether the Python module at path defines a top-level
// function name, read as text (bounded; never imported here).
func definesFunc(path, name string) bool {
	b, err := boundedfile.Read(path, maxModuleBytes)
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "def "+name+"(") {
			return true
		}
	}
	return false
}

// maxModuleBytes bounds a weights module read as text (phase0's are ~30 KiB).
const maxModuleBytes = 16 << 20

// memAvailable is how much memory the machine can give the reference; tests replace it.
var memAvailable = procMemAvailable

// procMemAvailable reads MemAvailable from /proc/meminfo (0 when unknown).
func procMemAvailable() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb int64
		if n, _ := fmt.Sscanf(line, "MemAvailable: %d kB", &kb); n == 1 {
			return kb << 10
		}
	}
	return 0
}
