package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"phase0/model"
	"phase0/scaffold"
	"phase0/weights"
	"phase0/worker"
)

// configGateResult is ops.config_gate's answer: the generated Config checked
// field by field against config.json, in Python.
type configGateResult struct {
	Status string `json:"status"`
	Fields []struct {
		Field      string `json:"field"`
		Generated  any    `json:"generated"`
		ConfigJSON any    `json:"config_json"`
		OK         bool   `json:"ok"`
		Note       string `json:"note"`
	} `json:"fields"`
	Problems []string `json:"problems"`
}

// Run is all of Phase 0 for one model.
func Run(ctx context.Context, s *Settings, modelArg, version string) *Report {
	r := NewReport("run", modelArg, version)
	defer r.finish()
	insp := r.inspect(ctx, s)
	if insp == nil || r.Status == StatusError || r.Status == StatusRejected {
		return r
	}
	if !r.preflight(s, insp) {
		return r
	}

	ws, spec, err := workspaceFor(s, insp, version)
	if err != nil {
		r.fail(err)
		return r
	}
	r.Workspace = &Workspace{Dir: ws, Name: spec.Name, Written: []string{}, Unchanged: []string{}, HelpersKept: []string{}}
	r.timed(s, "generate", func() (string, string) {
		res, err := scaffold.Generate(ws, spec, s.Force)
		if err != nil {
			if errors.Is(err, scaffold.ErrUserEdited) {
				err = fmt.Errorf("%w; rerun with --force to overwrite", err)
			}
			r.fail(err)
			return StatusError, err.Error()
		}
		r.Workspace.Written = append(r.Workspace.Written, res.Written...)
		r.Workspace.Unchanged = append(r.Workspace.Unchanged, res.Unchanged...)
		r.Workspace.HelpersKept = append(r.Workspace.HelpersKept, res.HelpersKept...)
		return StatusPass, fmt.Sprintf("%s: %d written, %d unchanged", ws, len(res.Written), len(res.Unchanged))
	})
	if r.Status == StatusError {
		return r
	}

	if r.Gates.Weights.Status != weights.StatusPass {
		r.Warnings = append(r.Warnings, "the Python gates and the HF baseline were skipped: the checkpoint failed the native weights gate, and transformers would fill missing tensors with random values")
	} else {
		r.pythonGates(ctx, s, insp, filepath.Join(ws, spec.Name+"_weights.py"))
	}
	r.settle()
	r.record(s, insp, ws, spec)
	return r
}

// workspaceFor picks <llms>/<name> and builds the scaffold spec.
func workspaceFor(s *Settings, insp *inspection, version string) (string, scaffold.Spec, error) {
	llms := s.LLMSDir
	if llms == "" {
		llms = "workspace"
	}
	llms, err := filepath.Abs(llms)
	if err != nil {
		return "", scaffold.Spec{}, err
	}
	name := s.Name
	if name == "" {
		name = scaffold.DeriveName(insp.ref.ID)
	}
	c := insp.analysis.Config
	spec := scaffold.Spec{
		Name: name, ModelID: insp.ref.ID, Revision: insp.ref.Revision, Family: insp.analysis.Family.Name(),
		NLayers: c.NLayers, EmbDim: c.EmbDim, NHeads: c.NHeads, NKVHeads: c.NKVHeads, HeadDim: c.HeadDim,
		HiddenDim: c.HiddenDim, VocabSize: c.VocabSize, RopeBase: c.RopeBase, RMSNormEps: c.RMSNormEps,
		TieWordEmbeddings: c.TieWordEmbeddings, QKVBias: c.QKVBias, QKNorm: c.QKNorm,
		AttentionFallback: s.AttentionFallback, ToolVersion: version,
	}
	if rs := c.RopeScaling; rs != nil {
		spec.RopeScaling = &scaffold.RopeScaling{Type: rs.RopeType, Factor: rs.Factor, LowFreqFactor: rs.LowFreqFactor,
			HighFreqFactor: rs.HighFreqFactor, OriginalMaxPositionEmbeddings: rs.OriginalMaxPositionEmbeddings}
	}
	return filepath.Join(llms, name), spec, nil
}

// pythonGates runs gate 1 (generated loader), gate 3 (generated Config) and
// gate 2 (baseline with the generated Config) in one isolated worker.
func (r *Report) pythonGates(ctx context.Context, s *Settings, insp *inspection, weightsModule string) {
	args := map[string]string{"weights_module": weightsModule, "model_dir": insp.ref.Dir}
	wreq, err1 := request("weights_gate", args)
	creq, err2 := request("config_gate", args)
	breq, err3 := baselineRequest(s, insp.ref, insp.analysis.Config, weightsModule)
	if err := errors.Join(err1, err2, err3); err != nil {
		r.fail(err)
		return
	}
	var pw PyWeights
	var cg configGateResult
	var bl baselineResult
	var resps []worker.Response
	var callErr error
	start := time.Now()
	r.timed(s, "python_gates", func() (string, string) {
		resps, callErr = s.call(ctx, []worker.Request{wreq, creq, breq}, &pw, &cg, &bl)
		if errors.Is(callErr, ErrNoPython) {
			r.fail(callErr)
			return StatusError, callErr.Error()
		}
		if len(resps) >= 1 {
			if pw.Problems == nil {
				pw.Problems = []string{}
			}
			r.Gates.PyWeights = &pw
		}
		if len(resps) >= 2 {
			r.mergeConfigGate(&cg)
		}
		if callErr != nil && len(resps) < 2 {
			reasons := pythonFailure(callErr)
			if r.Gates.PyWeights == nil {
				r.Gates.PyWeights = &PyWeights{Status: weights.StatusFail, Problems: reasons}
			}
			return weights.StatusFail, reasons[0]
		}
		return worstOf(r.Gates.PyWeights.Status, r.Gates.ConfigConsistency.Status), fmt.Sprintf("loader: %d layers, %d tensors; generated Config: %d fields checked", pw.Layers, pw.Tensors, len(cg.Fields))
	})
	if r.Status == StatusError {
		return
	}
	r.timed(s, "hf_baseline", func() (string, string) {
		if callErr != nil {
			b := failedBaseline(callErr, time.Since(start).Seconds())
			r.Gates.HFBaseline = b
			return b.Status, b.detail()
		}
		b := judgeBaseline(&bl, resps[2].Floats, bl.SecondsLoad+bl.SecondsPrefill)
		r.Gates.HFBaseline = b
		return b.Status, b.detail()
	})
}

// mergeConfigGate adds the Python-side field checks to gates.config_consistency.
func (r *Report) mergeConfigGate(cg *configGateResult) {
	cc := r.Gates.ConfigConsistency
	for _, f := range cg.Fields {
		cc.Checked = append(cc.Checked, "generated."+f.Field)
		if !f.OK {
			msg := fmt.Sprintf("generated LlamaConfig().%s is %v but config.json gives %v", f.Field, f.Generated, f.ConfigJSON)
			if f.Note != "" {
				msg += " (" + f.Note + ")"
			}
			cc.Add(weights.Finding{Field: f.Field, Source: "generated_config", Config: f.ConfigJSON, Actual: f.Generated, Message: msg})
		}
	}
	for _, p := range cg.Problems {
		cc.Add(weights.Finding{Field: "generated_config", Source: "generated_config", Message: p})
	}
	if cg.Status != weights.StatusPass && cc.Status == weights.StatusPass {
		cc.Add(weights.Finding{Field: "generated_config", Source: "generated_config", Message: "the Python config gate reported " + cg.Status})
	}
}

func worstOf(statuses ...string) string {
	for _, s := range statuses {
		if s != weights.StatusPass {
			return weights.StatusFail
		}
	}
	return weights.StatusPass
}

// blockers lists why Phase 0 failed, for TODO.md's Active blockers.
func (r *Report) blockers() []string {
	var out []string
	if g := r.Gates.Weights; g != nil && g.Status == weights.StatusFail {
		out = append(out, fmt.Sprintf("weights gate (native): %d missing, %d unexpected, %d mismatched, %d with NaN/Inf, %d errors", len(g.Missing), len(g.Unexpected), len(g.Mismatched), len(g.NonFinite), len(g.Errors)))
	}
	if g := r.Gates.PyWeights; g != nil && g.Status == weights.StatusFail {
		out = append(out, "weights gate (generated loader): "+firstOr(g.Problems, "failed"))
	}
	if g := r.Gates.ConfigConsistency; g != nil && g.Status == weights.StatusFail {
		for _, m := range g.Mismatches {
			out = append(out, "config consistency: "+m.Message)
		}
	}
	if g := r.Gates.HFBaseline; g != nil && g.Status == weights.StatusFail {
		out = append(out, "hf bf16 baseline: "+firstOr(g.Reasons, "failed"))
	}
	for i, b := range out {
		out[i] = strings.ReplaceAll(b, "\n", " ")
	}
	return out
}

func firstOr(list []string, def string) string {
	if len(list) > 0 {
		return list[0]
	}
	return def
}

// record writes the reports and, on PASS, the progress entry and the tick.
func (r *Report) record(s *Settings, insp *inspection, ws string, spec scaffold.Spec) {
	r.timed(s, "record", func() (string, string) {
		dir := s.ReportDir
		if dir == "" {
			dir = filepath.Join(ws, "docs", "development_progress", "phase0")
		}
		var errs []error
		r.Seconds = time.Since(r.Started).Seconds()
		if err := writeReports(r, dir); err != nil {
			errs = append(errs, err)
		}
		todo := filepath.Join(ws, "TODO.md")
		if r.Status == StatusPass {
			entry := progressEntry(r, insp.analysis.Config)
			errs = append(errs, scaffold.UpsertPhase0Entry(filepath.Join(ws, "docs", "development_progress", "progress.md"), entry))
			errs = append(errs, scaffold.SetPhase0Status(todo, true, nil))
		} else {
			errs = append(errs, scaffold.SetPhase0Status(todo, false, r.blockers()))
		}
		if err := errors.Join(errs...); err != nil {
			r.Warnings = append(r.Warnings, "recording the result: "+err.Error())
			return weights.StatusFail, err.Error()
		}
		return StatusPass, r.Workspace.ReportMD
	})
}

// progressEntry is the Phase 0 entry for progress.md.
func progressEntry(r *Report, c *model.Config) string {
	b := r.Gates.HFBaseline
	var sb strings.Builder
	fmt.Fprintf(&sb, "## Phase 0: Build CPU Reference — PASS (%s)\n\n", r.Started.Format("2006-01-02"))
	fmt.Fprintf(&sb, "- HF model: `%s`", r.ModelID)
	if r.Model != r.ModelID {
		fmt.Fprintf(&sb, " (given as `%s`)", r.Model)
	}
	if r.Revision != "" {
		fmt.Fprintf(&sb, " at revision `%s`", r.Revision)
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
	fmt.Fprintf(&sb, "- cpu_helpers kept: %s\n", strings.Join(r.Workspace.HelpersKept, ", "))
	fmt.Fprintf(&sb, "- Gates: weights %s (%d tensors), config consistency %s (%d checks), HF bf16 baseline %s\n",
		r.Gates.Weights.Status, r.Gates.Weights.Tensors, r.Gates.ConfigConsistency.Status, len(r.Gates.ConfigConsistency.Checked), b.Status)
	fmt.Fprintf(&sb, "- Canonical prompt (%s, %s runner `%s`): %q → token ids %v\n", b.PromptStyle, b.Runner, b.RunnerPath, b.Prompt, b.Tokens)
	fmt.Fprintf(&sb, "- Top-1: id %d %q (p=%.4f); logits OK: n=%d, NaN=%d, Inf=%d, min=%.3f, max=%.3f, mean=%.3f, std=%.3f, entropy=%.3f nats\n",
		b.Top1Token, b.Top1Text, b.Logits.Top1Prob, b.Logits.N, b.Logits.NaN, b.Logits.Inf, b.Logits.Min, b.Logits.Max, b.Logits.Mean, b.Logits.Std, b.Logits.Entropy)
	fmt.Fprintf(&sb, "- Tool: phase0 %s (torch %s, transformers %s), %s\n", r.Version, b.Torch, b.Transformers, r.Started.Format(time.RFC3339))
	return sb.String()
}

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
