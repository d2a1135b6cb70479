package orchestrator

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"time"

	"phase0/gate/baseline"
	"phase0/gate/quant"
	"phase0/gate/quantfolder"
	"phase0/gate/verdict"
	"phase0/output/record"
	"phase0/output/report"
	"phase0/output/scaffold"
	"phase0/python/ops"
	"phase0/read/hfcache"
	"phase0/read/llmstree"
	"phase0/run/reuse"
	"phase0/wire"
)

// Quantized deployments (llama32_1b_q4nx …) are validated through the
// tree: the folder's own loader against its bf16 reference, its constants
// against config.json, its MODEL_CHOICES pairing against the bundle's
// declared source, and the reference's bf16 baseline as gate 2. The folder
// is upstream's: nothing is written into it (wsfolder.Places).

// routeStage reports why the tree could not say what to validate.
func routeStage(_ context.Context, st *state) (outcome, error) {
	return outcome{}, st.in.routeErr
}

// runQuantized runs one chain per key; the first report stands for the
// command and carries the others (each also recorded on its own).
func runQuantized(ctx context.Context, s *Settings, modelArg, version string, uses []llmstree.Use) *report.Report {
	var reports []*report.Report
	for i := range uses {
		u := uses[i]
		r := runWith(ctx, inputs{s: s, command: "run", arg: u.Reference, version: version, quant: &u}, quantStages)
		r.Model = modelArg
		reports = append(reports, r)
	}
	return report.WithKeys(reports)
}

// quantFolderStage finds the folder's module and format, resolves the
// bundle through the HF cache (offline), and takes the folder as a
// validated (foreign) workspace: its lock and record live outside it.
func quantFolderStage(_ context.Context, st *state) (quantResult, outcome, error) {
	s, u := st.in.s, st.in.quant
	llms, err := filepath.Abs(s.LLMSDir)
	if err != nil {
		return quantResult{}, outcome{}, err
	}
	if err := quant.FamilyMismatch(u, st.facts.analysis); err != nil {
		return quantResult{}, outcome{}, err
	}
	q, warnings, err := quantfolder.Open(llms, *u, st.facts.model.Dir, hfcache.CacheDir(s.getenv), s.getenv(quantfolder.SourceVar))
	if err != nil {
		return quantResult{}, outcome{}, err
	}
	if _, _, err := st.lockWorkspace(q.Dir); err != nil {
		return quantResult{}, outcome{}, err
	}
	w := &workspace{dir: q.Dir, spec: scaffold.Spec{Name: u.Folder, ModelID: u.Reference}, foreign: true,
		report: &report.Workspace{Dir: q.Dir, Name: u.Folder, Mode: report.ModeValidatedExisting, Written: []string{}, Unchanged: []string{}, Kept: []string{},
			Foreign: []string{u.Module + " (upstream's quantized loader: validated, not replaced)"}, Swept: []string{}, HelpersKept: []string{}}}
	if w.report.RecordDir, err = s.places().OutsideRecord(q.Dir, u.Key+"="+st.facts.model.ID); err != nil {
		return quantResult{}, outcome{}, err
	}
	detail := fmt.Sprintf("%s key %q: %s via %s, reference %s", u.Folder, u.Key, q.Format.Name(), u.Loader, u.Reference)
	if u.Bundle != "" {
		detail += ", bundle " + q.Source
	}
	out := pass(detail)
	out.warnings = warnings
	return quantResult{folder: q, ws: w}, out, nil
}

// quantResult is quant_folder's two results.
type quantResult struct {
	folder *quantfolder.Folder
	ws     *workspace
}

// quantWeightsStage is quantized gate 1: the worker runs the folder's own
// loader; Go judges every tensor.
func quantWeightsStage(ctx context.Context, st *state) (*quant.Weights, outcome, error) {
	q, cfg := st.facts.quant, st.facts.analysis.Config
	if len(q.BundleProblems) > 0 {
		return quant.LoaderRaised(q.Format, q.Use.Loader, strings.Join(q.BundleProblems, "; ")), outcome{status: verdict.Fail, detail: q.BundleProblems[0]}, nil
	}
	// The dequantized tensors stay in the worker for quantized gate 2 (the
	// quant_baseline stage, same session): the folder's loader runs once.
	family, embedScale := st.facts.analysis.DeployedFamily()
	facts, err := st.py().QuantFacts(ctx, wire.QuantArgs{WeightsModule: q.Module, Source: q.Source, ReferenceDir: st.facts.model.Dir, NLayers: cfg.NLayers, Bound: q.Format.Bound(),
		CandidateDirs: q.CandidateDirs(), Keep: true, Family: family, EmbedScale: embedScale})
	if err != nil {
		if stop := workerFailure(err); stop != nil {
			return nil, outcome{}, stop
		}
		w := quant.LoaderRaised(q.Format, q.Use.Loader, filepath.Base(q.Module)+" raised: "+st.explain("quant_weights", err))
		return w, outcome{status: w.Status, detail: w.Summary}, nil
	}
	if f := facts.ImportFailure; f != nil {
		return nil, outcome{}, q.ImportError(f)
	}
	w := quant.Judge(q.Format, &facts, quant.Expect{NLayers: cfg.NLayers, QKNorm: cfg.QKNorm, QKVBias: cfg.QKVBias, Family: family})
	w.Closeness = quant.MeasureCloseness(&facts, q.Use.Reference, q.Candidates)
	return w, outcome{status: w.Status, detail: w.Summary}, nil
}

// quantConfigStage is quantized gate 3: the module's hard-coded constants
// against the reference's config.json and the bundle's own.
func quantConfigStage(ctx context.Context, st *state) (*quant.Constants, outcome, error) {
	q := st.facts.quant
	consts, files := q.Constants()
	rt := q.RopeTables(filepath.Dir(q.Dir)) // what the folder's prefill and decode use
	rt.AddTheta(consts, files)
	var notes []string
	var rope *wire.QuantModuleFacts
	if ok, _ := pythonReady(st); ok {
		mf, err := st.py().QuantModuleFacts(ctx, wire.QuantModuleArgs{WeightsModule: q.Module})
		if err != nil {
			if stop := workerFailure(err); stop != nil {
				return nil, outcome{}, stop
			}
			notes = append(notes, fmt.Sprintf("%s's config functions could not be called: %s", q.Use.Module, st.explain("quant_config", err)))
		} else if f := mf.ImportFailure; f != nil {
			return nil, outcome{}, q.ImportError(f)
		} else {
			for name, g := range mf.Configs {
				maps.Copy(consts, quant.ConfigFunctionConstants(name, g.Fields))
			}
			for name, why := range mf.Raised {
				notes = append(notes, fmt.Sprintf("%s: %s() raised %s", q.Use.Module, name, why))
			}
			rope = &mf
		}
	}
	c := quant.CheckConstantsFrom(q.Use.Module, consts, files, st.facts.analysis.Config, q.Bundle)
	c.CheckBundleConfig(st.facts.analysis.Config, q.Bundle)
	for _, n := range notes {
		c.FailWith("%s", n)
	}
	family, _ := st.facts.analysis.DeployedFamily()
	if family != "" && rope != nil {
		// A deployed family's module builds its RoPE table its own way
		// (Gemma per layer kind, Phi from the bundle's LongRoPE factors):
		// judged by the family's facts instead of the shared behaviour.
		f, err := st.py().QuantFamilyFacts(ctx, wire.QuantFamilyArgs{WeightsModule: q.Module, Family: family, ReferenceDir: st.facts.model.Dir, Source: q.Source})
		if err != nil {
			if stop := workerFailure(err); stop != nil {
				return nil, outcome{}, stop
			}
			c.FailWith("family facts of %s: %s", q.Use.Module, st.explain("quant_config", err))
		} else {
			c.JudgeFamily(family, &f, st.facts.analysis.Config, st.facts.analysis.Deployed)
			rt.FamilyJudged(q.Module) // the module's own tables were judged by the family's facts
		}
		rope = nil
	}
	from := ""
	if rope != nil {
		from = rt.JudgedFrom(q.Module, rope.RopeLUT, rope.RopeModule)
	}
	if rope != nil && (rope.RopeLUT || from != "") {
		if err := st.quantRopeBehaviour(ctx, c, rope, from); err != nil {
			return nil, outcome{}, err
		}
	}
	rt.Warn(c, c.Behaviour != nil)
	c.Conclude()
	return c, outcome{status: c.Status, detail: c.Summary}, nil
}

// quantRopeBehaviour judges the RoPE table the folder uses by behaviour, as
// for a bf16 module: the module's own (built for its *_config(), else
// LlamaConfig()), or the table and config of the module its prefill takes
// it from (from). A worker failure that is not the module's is returned.
func (st *state) quantRopeBehaviour(ctx context.Context, c *quant.Constants, rope *wire.QuantModuleFacts, from string) error {
	q := st.facts.quant
	fn := ""
	for name := range rope.Configs {
		if fn == "" || name < fn {
			fn = name
		}
	}
	args := wire.BehaviourArgs{WeightsModule: q.Module, ModelDir: st.facts.model.Dir, MaxSeq: st.in.s.MaxSeq, ConfigFunction: fn}
	if from != "" {
		args.WeightsModule, args.ConfigFunction = from, ""
		c.RopeFrom = from
	} else if rope.RMSNorm {
		args.HelpersModule = q.Module // its norms are the module's own
	}
	b, err := st.py().BehaviourFacts(ctx, args)
	if err != nil {
		if stop := workerFailure(err); stop != nil {
			return stop
		}
		c.FailWith("behaviour facts of %s: %s", q.Use.Module, st.explain("quant_config", err))
	} else {
		c.JudgeBehaviour(st.facts.analysis.Config, b, rope.RMSNorm && from == "")
	}
	return nil
}

// pairingStage checks the key's reference against the bundle's declared source.
func pairingStage(_ context.Context, st *state) (*quant.Pairing, outcome, error) {
	q := st.facts.quant
	var closeness []quant.Closeness
	if w := st.sections.quantWeights; w != nil {
		closeness = w.Closeness
	}
	p := quant.CheckPairing(q.Use, q.Declared, closeness)
	return p, outcome{status: p.Status, detail: p.Summary}, nil
}

// quantGate2 is the quant_baseline stage's two results: the reference's
// bf16 baseline (gate 2) and quantized gate 2, from one op.
type quantGate2 struct {
	baseline *baseline.Baseline
	e2e      *quant.EndToEnd
}

// quantBaselineStage is gate 2 for a quantized key: the reference's bf16
// baseline, and in the same op (the model the baseline loaded, no second
// load) the folder's dequantized projections patched in and prefilled on
// the canonical prompt and the calibration passage; Go judges both.
func quantBaselineStage(ctx context.Context, st *state) (quantGate2, outcome, error) {
	q, cfg := st.facts.quant, st.facts.analysis.Config
	e2eArgs := wire.QuantE2EArgs{WeightsModule: q.Module, Source: q.Source, ReferenceDir: st.facts.model.Dir, NLayers: cfg.NLayers, Rule: q.Format.Bound()}
	notRun := q.E2ENotRun(st.sections.quantWeights) // the bundle's fault is gate 1's, never the reference's
	if rec, _ := bf16Record(st); rec != nil && rec.Gates.HFBaseline != nil && len(rec.Gates.HFBaseline.Tokens) > 0 {
		// Gate 2 is the reference's own baseline, recorded as a PASS on
		// inputs that have not changed: reused; quantized gate 2 alone runs.
		b := *rec.Gates.HFBaseline
		b.Summary = fmt.Sprintf("reused from %s (inputs unchanged since %s): %s", rec.ReusedFrom.Path, rec.ReusedFrom.Recorded.Format(time.RFC3339), b.Summary)
		out := quantGate2{baseline: &b}
		if notRun != "" {
			out.e2e = quant.E2ENotRun(q.Format, notRun)
			return out, outcome{status: b.Status, detail: "bf16: " + b.Summary + "; quantized: " + out.e2e.Summary}, nil
		}
		facts, err := st.py().QuantE2E(ctx, wire.QuantE2EOnlyArgs{QuantE2EArgs: e2eArgs, ModelDir: st.facts.model.Dir, PromptTokens: b.Tokens})
		if err != nil {
			if stop := workerFailure(err); stop != nil {
				return quantGate2{}, outcome{}, stop
			}
			out.e2e = quant.E2ERaised(q.Format, "quant_e2e raised: "+st.explain("quant_baseline", err))
		} else {
			out.e2e = quant.JudgeE2E(q.Format, &facts, cfg.NLayers)
			out.e2e.AgainstGate1(st.sections.quantWeights)
		}
		return out, outcome{status: verdict.Worst(b.Status, out.e2e.Status), detail: "bf16: " + b.Summary + "; quantized: " + out.e2e.Summary}, nil
	}
	start := time.Now()
	args := baselineRequest(st.in.s, st.facts.model, cfg, "")
	if err := promptFits(ctx, st, args); err != nil {
		return quantGate2{}, outcome{}, err
	}
	if notRun == "" {
		args.Quant = &e2eArgs
	}
	res, logits, err := st.py().Baseline(ctx, args)
	raised := ""
	if err != nil && args.Quant != nil && workerFailure(err) == nil {
		// Raised with the folder's tensors in: the bf16 baseline again alone, the raise is gate 2's.
		raised = "the baseline op raised once the folder's dequantized tensors were patched in: " + st.explain("quant_baseline", err)
		args.Quant = nil
		start = time.Now()
		res, logits, err = st.py().Baseline(ctx, args)
	}
	if err != nil {
		if stop := workerFailure(err); stop != nil {
			return quantGate2{}, outcome{}, stop
		}
		b := baseline.NewBaseline()
		b.Seconds = time.Since(start).Seconds()
		b.Fail(st.explain("quant_baseline", err))
		return quantGate2{baseline: b}, outcome{status: b.Status, detail: b.Summary}, nil
	}
	b := baseline.FromRunner(&res, logits, cfg.VocabSize, res.SecondsLoad+res.SecondsPrefill, st.in.s.MaxPerplexityRatio)
	out := quantGate2{baseline: b}
	status, detail := b.Status, b.Summary
	switch {
	case notRun != "":
		out.e2e = quant.E2ENotRun(q.Format, notRun)
	case raised != "":
		out.e2e = quant.E2ERaised(q.Format, raised)
		status = verdict.Worst(status, out.e2e.Status)
	case res.Quant == nil:
		return out, outcome{}, fmt.Errorf("%w: op baseline was asked for quantized gate 2 (quant) and returned no quant facts", ops.ErrContract)
	default:
		out.e2e = quant.JudgeE2E(q.Format, res.Quant, cfg.NLayers)
		out.e2e.AgainstGate1(st.sections.quantWeights)
		status = verdict.Worst(status, out.e2e.Status)
	}
	detail = "bf16: " + detail + "; quantized: " + out.e2e.Summary
	return out, outcome{status: status, detail: detail}, nil
}

// bf16Record is the reference's own bf16 run's recorded report when it can
// be reused (a PASS whose inputs are unchanged: reuse.go decides, for the
// run `phase0 run <reference> --llms-dir T` would be), else why not.
func bf16Record(st *state) (*report.Report, string) {
	s := *st.in.s
	s.Name = "" // the reference's own run names no quantized folder
	probe := &state{in: inputs{s: &s, command: "run", arg: st.in.arg, version: st.in.version}}
	var stamp *reuse.Inputs
	return probe.reusable(&stamp)
}

// recordID names the run's record: the model's id, or for a quantized
// folder's key "key=reference", so each MODEL_CHOICES key keeps its own.
func (st *state) recordID() string {
	if q := st.in.quant; q != nil {
		return q.Key + "=" + st.facts.model.ID
	}
	return st.facts.model.ID
}

// quantReuseStage reuses the key's recorded verdict when none of its inputs
// changed (reuse.QuantInputs besides a bf16 run's), as reuse does for a
// bf16 run: under the key's lock, before any Python runs. Otherwise it
// says why not (SKIPPED) and the chain runs in full.
func quantReuseStage(_ context.Context, st *state) (reuseResult, outcome, error) {
	var res reuseResult
	rec, why := st.quantReusable(&res.stamp)
	return reuseOutcome(res, rec, why)
}

// quantReusable returns the key's recorded report when it can be reused,
// else why not; what it stamps goes to *stamp (compared again when the run
// records).
func (st *state) quantReusable(stamped **reuse.Inputs) (*report.Report, string) {
	s, w := st.in.s, st.facts.workspace
	cur, err := st.currentInputs(st.facts.model, w.dir)
	if err != nil {
		return nil, err.Error()
	}
	*stamped = cur
	if s.Fresh {
		return nil, "--fresh"
	}
	if s.Refresh {
		return nil, "--refresh"
	}
	reports, err := s.places().Reports(w.dir, st.recordID())
	if err != nil {
		return nil, err.Error()
	}
	// Under the key's lock: a record commit a kill cut short is finished,
	// and what it left is removed, before the record is read.
	if _, err := record.Recover(reports); err != nil {
		return nil, err.Error()
	}
	rec, why := reuse.Recorded(reports)
	if why != "" {
		return nil, why
	}
	return reuse.Decide(rec, cur)
}

// quantInputs stamps what the key's verdict depends on besides a bf16
// run's inputs (reuse.StampQuant), the reference's own bf16 record where
// bf16Record looks for it.
func (st *state) quantInputs() (*reuse.QuantInputs, error) {
	s, q, ref := st.in.s, st.facts.quant, st.facts.model
	bf16 := *s
	bf16.Name = ""
	ws, err := bf16.places().Workspace(ref.ID)
	if err != nil {
		return nil, err
	}
	reports, err := bf16.places().Reports(ws, ref.ID)
	if err != nil {
		return nil, err
	}
	candidates := map[string]string{}
	for _, c := range q.Candidates {
		candidates[c.ID] = c.Dir
	}
	return reuse.StampQuant(q.Use, q.Source, candidates, s.lookupEnv, reports)
}
