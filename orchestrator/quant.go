package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"phase0/configgate"
	"phase0/hfcache"
	"phase0/internal/boundedfile"
	"phase0/judge"
	"phase0/llmstree"
	"phase0/model"
	"phase0/ops"
	"phase0/quant"
	"phase0/report"
	"phase0/scaffold"
	"phase0/verdict"
)

// Quantized deployments (llama32_1b_q4nx …) are validated through the
// tree: the folder's own loader against its bf16 reference, its constants
// against config.json, its MODEL_CHOICES pairing against the bundle's
// declared source, and the reference's bf16 baseline as gate 2. The folder
// is upstream's: nothing is written into it (foreign.go).

// quantizedUses says which quantized keys validating arg through the tree
// means: with --name naming a quantized folder, its keys whose reference
// is arg; without --name, every key of the folders that load the bundle
// arg. A bf16 id without --name is a bf16 run (none).
func quantizedUses(s *Settings, arg string) ([]llmstree.Use, error) {
	if s.LLMSDir == "" || strings.Count(arg, "/") != 1 {
		return nil, nil
	}
	folders, err := llmstree.Scan(s.LLMSDir, scaffold.ReservedNames)
	if err != nil {
		return nil, err
	}
	id, _, _ := strings.Cut(arg, "@")
	if s.Name != "" {
		for _, f := range folders {
			if f.Name == s.Name && f.Quant != nil {
				uses := llmstree.QuantizedUses(folders, id, s.Name)
				if len(uses) == 0 {
					return nil, fmt.Errorf("%s/verify_adapter.py: no MODEL_CHOICES key pairs %s (keys: %s)", s.Name, id, choicesText(f.Quant.Choices))
				}
				return uses, nil
			}
		}
		return nil, nil
	}
	var uses []llmstree.Use
	for _, u := range llmstree.QuantizedUses(folders, id, "") {
		if strings.EqualFold(u.Bundle, id) {
			uses = append(uses, u)
		}
	}
	return uses, nil
}

func choicesText(cs []llmstree.Choice) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%q: %s", c.Key, c.Reference))
	}
	return strings.Join(parts, ", ")
}

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
	first := reports[0]
	for _, r := range reports[1:] {
		first.Keys = append(first.Keys, r)
		first.Status = verdict.Worst(first.Status, r.Status)
	}
	return first
}

// quantFolder is the quant_folder stage's result: the module, its format,
// what its loader reads, and the bundle's own config and card.
type quantFolder struct {
	use    llmstree.Use
	dir    string // <llms>/<folder>
	module string // its weights module
	src    []byte // the module's text
	format quant.Format
	source string // what the loader is given: the bundle's snapshot, else the reference's folder
	// candidates are the other checkpoints the bundle might come from
	// (the folder's other references, the card's base_model) that are
	// cached: the numbers back the pairing.
	candidates []quant.CandidateID
	bundle     *model.Config // the bundle's config.json, when it ships one
	declared   string        // the bundle card's base_model
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
	var warnings []string
	q := &quantFolder{use: *u, dir: filepath.Join(llms, u.Folder), source: st.facts.model.Dir}
	q.module = filepath.Join(q.dir, u.Module)
	if q.src, err = boundedfile.Read(q.module, maxModuleBytes); err != nil {
		return quantResult{}, outcome{}, fmt.Errorf("reading %s: %w", q.module, err)
	}
	if q.format, err = quant.Detect(q.src); err != nil {
		return quantResult{}, outcome{}, fmt.Errorf("%s: %w", q.module, err)
	}
	if u.Bundle != "" {
		ref, err := hfcache.ParseID(u.Bundle)
		if err != nil {
			return quantResult{}, outcome{}, fmt.Errorf("bundle %s: %w", u.Bundle, err)
		}
		res, err := hfcache.Resolve(hfcache.CacheDir(s.getenv), ref)
		if err != nil {
			return quantResult{}, outcome{}, fmt.Errorf("bundle %s of %s is not in the HF cache (phase0 reads bundles offline; fetch it with `hf download %s`): %w", u.Bundle, u.Folder, u.Bundle, err)
		}
		q.source = res.Dir
		if card, err := boundedfile.Read(filepath.Join(res.Dir, "README.md"), maxModuleBytes); err == nil {
			q.declared = quant.BaseModel(card)
		}
		if raw, err := model.ReadRaw(os.DirFS(res.Dir)); err == nil {
			if a := model.Analyze(raw); a.Config != nil {
				q.bundle = a.Config
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			warnings = append(warnings, fmt.Sprintf("bundle %s: config.json unreadable: %v", u.Bundle, err))
		}
	}
	q.candidates = candidateCheckpoints(s, u, q.declared)
	if _, _, err := st.lockWorkspace(q.dir); err != nil {
		return quantResult{}, outcome{}, err
	}
	w := &workspace{dir: q.dir, spec: scaffold.Spec{Name: u.Folder, ModelID: u.Reference}, foreign: true,
		report: &report.Workspace{Dir: q.dir, Name: u.Folder, Mode: report.ModeValidatedExisting, Written: []string{}, Unchanged: []string{}, Kept: []string{},
			Foreign: []string{u.Module + " (upstream's quantized loader: validated, not replaced)"}, Swept: []string{}, HelpersKept: []string{}}}
	if w.report.RecordDir, err = s.outsideRecordDir(q.dir, u.Key+"="+st.facts.model.ID); err != nil {
		return quantResult{}, outcome{}, err
	}
	detail := fmt.Sprintf("%s key %q: %s via %s, reference %s", u.Folder, u.Key, q.format.Name(), u.Loader, u.Reference)
	if u.Bundle != "" {
		detail += ", bundle " + q.source
	}
	out := pass(detail)
	out.warnings = warnings
	return quantResult{folder: q, ws: w}, out, nil
}

// quantResult is quant_folder's two results.
type quantResult struct {
	folder *quantFolder
	ws     *workspace
}

// quantWeightsStage is quantized gate 1: the worker runs the folder's own
// loader; Go judges every tensor.
func quantWeightsStage(ctx context.Context, st *state) (*quant.Weights, outcome, error) {
	q, cfg := st.facts.quant, st.facts.analysis.Config
	var dirs []string
	for _, c := range q.candidates {
		dirs = append(dirs, c.Dir)
	}
	facts, err := st.py().QuantFacts(ctx, ops.QuantArgs{WeightsModule: q.module, Source: q.source, ReferenceDir: st.facts.model.Dir, NLayers: cfg.NLayers, Bound: q.format.Bound(),
		CandidateDirs: dirs})
	if err != nil {
		if stop := workerFailure(err); stop != nil {
			return nil, outcome{}, stop
		}
		w := &quant.Weights{Section: verdict.NewSection(), Format: q.format.Name(), Loader: q.use.Loader, Limits: q.format.Limits(), Rows: []quant.Row{}}
		for _, r := range reasons(err) {
			w.FailWith("%s raised: %s", filepath.Base(q.module), r)
		}
		w.Summary = w.Findings[0]
		return w, outcome{status: w.Status, detail: w.Summary}, nil
	}
	if f := facts.ImportFailure; f != nil {
		return nil, outcome{}, importFailure(q, f)
	}
	w := quant.Judge(q.format, &facts, quant.Expect{NLayers: cfg.NLayers, QKNorm: cfg.QKNorm, QKVBias: cfg.QKVBias})
	w.Closeness = quant.MeasureCloseness(&facts, q.use.Reference, q.candidates)
	return w, outcome{status: w.Status, detail: w.Summary}, nil
}

// importFailure names what the module could not import, and the folder
// beside llms/ that is missing: a --llms-dir holding an extracted llms/
// alone cannot run upstream's quantized modules.
func importFailure(q *quantFolder, f *quant.ImportFailure) error {
	var rel []string
	for _, p := range f.MissingPaths {
		if r, err := filepath.Rel(q.dir, p); err == nil {
			rel = append(rel, r)
		} else {
			rel = append(rel, p)
		}
	}
	if len(rel) == 0 {
		return fmt.Errorf("%s cannot be imported: %s", q.module, f.Message)
	}
	return fmt.Errorf("%s imports %s from %s, which does not exist: --llms-dir must be the llms/ folder of a programming_examples checkout (the quantized modules import from its siblings: %s)",
		q.module, f.Module, strings.Join(rel, ", "), strings.Join(rel, ", "))
}

// quantConfigStage is quantized gate 3: the module's hard-coded constants
// against the reference's config.json and the bundle's own.
func quantConfigStage(ctx context.Context, st *state) (*quant.Constants, outcome, error) {
	q := st.facts.quant
	consts := quant.ModuleConstants(q.src)
	if adapter, err := boundedfile.Read(filepath.Join(q.dir, llmstree.AdapterFile), maxModuleBytes); err == nil {
		for k, v := range quant.ModuleConstants(adapter) {
			if _, ok := consts[k]; !ok {
				consts[k] = v
			}
		}
	}
	var notes []string
	var rope *ops.QuantModuleFacts
	if ok, _ := pythonReady(st); ok {
		mf, err := st.py().QuantModuleFacts(ctx, ops.QuantModuleArgs{WeightsModule: q.module})
		if err != nil {
			if stop := workerFailure(err); stop != nil {
				return nil, outcome{}, stop
			}
			notes = append(notes, fmt.Sprintf("%s's config functions could not be called: %s", q.use.Module, reasons(err)[0]))
		} else if f := mf.ImportFailure; f != nil {
			return nil, outcome{}, importFailure(q, f)
		} else {
			for name, g := range mf.Configs {
				maps.Copy(consts, quant.ConfigFunctionConstants(name, g.Fields))
			}
			for name, why := range mf.Raised {
				notes = append(notes, fmt.Sprintf("%s: %s() raised %s", q.use.Module, name, why))
			}
			rope = &mf
		}
	}
	c := quant.CheckConstants(q.use.Module, consts, st.facts.analysis.Config, q.bundle)
	for _, n := range notes {
		c.FailWith("%s", n)
	}
	if rope != nil && rope.RopeLUT {
		// The RoPE table judged by behaviour, as for a bf16 module, built
		// for the module's own config (its *_config(), else LlamaConfig()).
		fn := ""
		for name := range rope.Configs {
			if fn == "" || name < fn {
				fn = name
			}
		}
		args := ops.BehaviourArgs{WeightsModule: q.module, ModelDir: st.facts.model.Dir, MaxSeq: st.in.s.MaxSeq, ConfigFunction: fn}
		if rope.RMSNorm {
			args.HelpersModule = q.module // its norms are the module's own
		}
		b, err := st.py().BehaviourFacts(ctx, args)
		if err != nil {
			if stop := workerFailure(err); stop != nil {
				return nil, outcome{}, stop
			}
			c.FailWith("behaviour facts of %s: %s", q.use.Module, reasons(err)[0])
		} else {
			cc := configgate.New()
			if rope.RMSNorm {
				cc.Behaviour(st.facts.analysis.Config, b, q.use.Module)
			} else {
				cc.RopeBehaviour(st.facts.analysis.Config, b, q.use.Module)
			}
			c.Behaviour = cc
			if cc.Status != verdict.Pass {
				for _, f := range cc.AllFindings() {
					c.FailWith("%s", f)
				}
			}
		}
	}
	if c.Status != verdict.Pass {
		c.Summary = fmt.Sprintf("%s; %s", c.Summary, c.Findings[0])
	}
	return c, outcome{status: c.Status, detail: c.Summary}, nil
}

// pairingStage checks the key's reference against the bundle's declared source.
func pairingStage(_ context.Context, st *state) (*quant.Pairing, outcome, error) {
	q := st.facts.quant
	var closeness []quant.Closeness
	if w := st.sections.quantWeights; w != nil {
		closeness = w.Closeness
	}
	p := quant.CheckPairing(q.use, q.declared, closeness)
	return p, outcome{status: p.Status, detail: p.Summary}, nil
}

// quantGate2 is the quant_baseline stage's two results: the reference's
// bf16 baseline (gate 2) and quantized gate 2, from one op.
type quantGate2 struct {
	baseline *judge.Baseline
	e2e      *quant.EndToEnd
}

// quantBaselineStage is gate 2 for a quantized key: the reference's bf16
// baseline, and in the same op (the model the baseline loaded, no second
// load) the folder's dequantized projections patched in and prefilled on
// the canonical prompt and the calibration passage; Go judges both.
func quantBaselineStage(ctx context.Context, st *state) (quantGate2, outcome, error) {
	q, cfg := st.facts.quant, st.facts.analysis.Config
	e2eArgs := ops.QuantE2EArgs{WeightsModule: q.module, Source: q.source, ReferenceDir: st.facts.model.Dir, NLayers: cfg.NLayers}
	if rec, _ := bf16Record(st); rec != nil && rec.Gates.HFBaseline != nil && len(rec.Gates.HFBaseline.Tokens) > 0 {
		// Gate 2 is the reference's own baseline, recorded as a PASS on
		// inputs that have not changed: reused; quantized gate 2 alone runs.
		b := *rec.Gates.HFBaseline
		b.Summary = fmt.Sprintf("reused from %s (inputs unchanged since %s): %s", rec.ReusedFrom.Path, rec.ReusedFrom.Recorded.Format(time.RFC3339), b.Summary)
		facts, err := st.py().QuantE2E(ctx, ops.QuantE2EOnlyArgs{QuantE2EArgs: e2eArgs, ModelDir: st.facts.model.Dir, PromptTokens: b.Tokens})
		out := quantGate2{baseline: &b}
		if err != nil {
			if stop := workerFailure(err); stop != nil {
				return quantGate2{}, outcome{}, stop
			}
			e := &quant.EndToEnd{Section: verdict.NewSection(), Format: q.format.Name(), Limits: q.format.E2ELimits()}
			for _, r := range reasons(err) {
				e.FailWith("quant_e2e raised: %s", r)
			}
			e.Summary = e.Findings[0]
			out.e2e = e
		} else {
			out.e2e = quant.JudgeE2E(q.format, &facts, cfg.NLayers)
		}
		return out, outcome{status: verdict.Worst(b.Status, out.e2e.Status), detail: "bf16: " + b.Summary + "; quantized: " + out.e2e.Summary}, nil
	}
	start := time.Now()
	args := baselineRequest(st.in.s, st.facts.model, cfg, "")
	args.Quant = &e2eArgs
	res, logits, err := st.py().Baseline(ctx, args)
	if err != nil {
		if stop := workerFailure(err); stop != nil {
			return quantGate2{}, outcome{}, stop
		}
		b := judge.NewBaseline()
		b.Seconds = time.Since(start).Seconds()
		b.Fail(reasons(err)...)
		return quantGate2{baseline: b}, outcome{status: b.Status, detail: b.Summary}, nil
	}
	b := baselineSection(&res, logits, cfg.VocabSize, res.SecondsLoad+res.SecondsPrefill, st.in.s.MaxPerplexityRatio)
	out := quantGate2{baseline: b}
	status, detail := b.Status, b.Summary
	if res.Quant == nil {
		return out, outcome{}, fmt.Errorf("%w: op baseline was asked for quantized gate 2 (quant) and returned no quant facts", ops.ErrContract)
	}
	out.e2e = quant.JudgeE2E(q.format, res.Quant, cfg.NLayers)
	status = verdict.Worst(status, out.e2e.Status)
	detail = "bf16: " + detail + "; quantized: " + out.e2e.Summary
	return out, outcome{status: status, detail: detail}, nil
}

// candidateCheckpoints are the checkpoints other than the key's reference
// that the bundle might come from (the folder's other MODEL_CHOICES
// references and the card's base_model), those complete in the HF cache.
func candidateCheckpoints(s *Settings, u *llmstree.Use, declared string) []quant.CandidateID {
	if u.Bundle == "" {
		return nil // quantized on load from the reference: nothing to tell apart
	}
	var ids []string
	for _, c := range u.Choices {
		ids = append(ids, c.Reference)
	}
	ids = append(ids, declared)
	var out []quant.CandidateID
	for _, id := range ids {
		if id == "" || strings.EqualFold(id, u.Reference) || slices.ContainsFunc(out, func(c quant.CandidateID) bool { return strings.EqualFold(c.ID, id) }) {
			continue
		}
		ref, err := hfcache.ParseID(id)
		if err != nil {
			continue
		}
		if res, err := hfcache.Resolve(hfcache.CacheDir(s.getenv), ref); err == nil && res.Complete() {
			out = append(out, quant.CandidateID{ID: id, Dir: res.Dir})
		}
	}
	return out
}

// bf16Record is the reference's own bf16 run's recorded report when it can
// be reused (a PASS whose inputs are unchanged: reuse.go decides, for the
// run `phase0 run <reference> --llms-dir T` would be), else why not.
func bf16Record(st *state) (*report.Report, string) {
	s := *st.in.s
	s.Name = "" // the reference's own run names no quantized folder
	probe := &state{in: inputs{s: &s, command: "run", arg: st.in.arg, version: st.in.version}}
	var stamp *runInputs
	return probe.reusable(&stamp)
}
