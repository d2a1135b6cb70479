package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"phase0/gate/config"
	"phase0/gate/preflight"
	"phase0/gate/weights"
	"phase0/output/report"
	"phase0/wire"
)

// RunBF16 is all of Phase 0 for one bf16 model (run/modelrun.Run decides
// whether `phase0 run MODEL` is one, or a quantized folder's keys).
func RunBF16(ctx context.Context, s *Settings, modelArg, version string) *report.Report {
	return runChain(ctx, s, "run", modelArg, version, withoutSkippedScan(runStages, s))
}

// loaded is the python_weights stage's result: gate 1 through the
// generated loader, and the loader's lm_head against its embed_table
// (judged in gate 3).
type loaded struct {
	loader *weights.Loader
	tie    *wire.TieFacts
}

// pythonWeightsStage is gate 1 from the user's side: the generated loader loads the
// real checkpoint in Python, and Go judges what came back.
func pythonWeightsStage(ctx context.Context, st *state) (loaded, outcome, error) {
	src := st.facts.model
	facts, err := st.Py().LoaderFacts(ctx, wire.ModuleArgs{WeightsModule: st.weightsModule(), ModelDir: src.Dir})
	if err != nil {
		if stop := WorkerFailure(err); stop != nil {
			return loaded{}, outcome{}, stop
		}
		l := weights.NewLoader()
		l.Raised([]string{st.Explain("python_weights", err)})
		return loaded{loader: l}, outcome{Status: l.Status, Detail: l.Summary}, nil
	}
	l := weights.CheckLoader(st.facts.analysis.Config, &facts.LoaderFacts, st.inv(), src.FS)
	return loaded{loader: l, tie: facts.Tie}, outcome{Status: l.Status, Detail: l.Summary}, nil
}

// configFactsStage completes gate 3: the generated LlamaConfig() and what
// transformers resolves, each compared with the extracted Config, on a
// copy of the weights stage's cross-check.
func configFactsStage(ctx context.Context, st *state) (*config.Consistency, outcome, error) {
	cc := st.sections.crossCheck.Clone()
	cfg, src := st.facts.analysis.Config, st.facts.model
	facts, err := st.Py().ConfigFacts(ctx, wire.ModuleArgs{WeightsModule: st.weightsModule(), ModelDir: src.Dir})
	if err != nil {
		if stop := WorkerFailure(err); stop != nil {
			return nil, outcome{}, stop
		}
		cc.FailWith("config facts: %s", st.Explain("config_facts", err))
		return cc, outcome{Status: cc.Status, Detail: cc.Findings[0]}, nil
	}
	if facts.Generated == nil || facts.Transformers == nil {
		return nil, outcome{}, fmt.Errorf("config_facts returned no generated or transformers facts")
	}
	module := filepath.Base(st.weightsModule())
	mod := config.Module{File: module, Generated: st.facts.workspace.report.Mode == report.ModeGenerated}
	// From here an error (an interrupt, a worker that died) still keeps
	// what was judged so far: the report of the stopped run shows it.
	if err := errors.Join(cc.Generated(cfg, facts.Generated, mod), cc.Transformers(cfg, facts.Transformers)); err != nil {
		return cc, outcome{}, err
	}
	if err := st.behaviour(ctx, cc, module); err != nil {
		return cc, outcome{}, err
	}
	cc.Tie(cfg, st.facts.tie, st.inv(), src.FS)
	return cc, outcome{Status: cc.Status, Detail: cc.Summary}, nil
}

// behaviour judges what the module does (its RoPE table, its helpers'
// RMSNorm) against transformers for the checkpoint's config, into cc (gate
// 3). An op that raises is a gate 3 FAIL; only a worker that cannot
// evaluate stops the run.
func (st *state) behaviour(ctx context.Context, cc *config.Consistency, module string) error {
	w := st.facts.workspace
	args := wire.BehaviourArgs{WeightsModule: st.weightsModule(), HelpersModule: filepath.Join(w.dir, w.spec.Name+"_cpu_helpers.py"),
		ModelDir: st.facts.model.Dir, MaxSeq: st.in.s.MaxSeq}
	b, err := st.Py().BehaviourFacts(ctx, args)
	if err != nil {
		if stop := WorkerFailure(err); stop != nil {
			return stop
		}
		cc.FailWith("behaviour facts of %s: %s", module, st.Explain("config_facts", err))
		return nil
	}
	cc.Behaviour(st.facts.analysis.Config, b, module)
	return nil
}

// memAvailable is how much memory the machine can give the reference; tests replace it.
var memAvailable = preflight.MemAvailable
