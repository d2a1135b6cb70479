package quantkey

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strings"

	"phase0/gate/quant"
	"phase0/gate/verdict"
	"phase0/run/chain"
	"phase0/run/orchestrator"
	"phase0/wire"
)

// quantWeightsStage is quantized gate 1: the worker runs the folder's own
// loader; Go judges every tensor.
func quantWeightsStage(ctx context.Context, k *keyState) (*quant.Weights, chain.Outcome, error) {
	q, cfg := k.facts.folder, k.core.Analysis().Config
	if len(q.BundleProblems) > 0 {
		return quant.LoaderRaised(q.Format, q.Use.Loader, strings.Join(q.BundleProblems, "; ")), chain.Outcome{Status: verdict.Fail, Detail: q.BundleProblems[0]}, nil
	}
	// The dequantized tensors stay in the worker for quantized gate 2 (the
	// quant_baseline stage, same session): the folder's loader runs once.
	family, embedScale := k.core.Analysis().DeployedFamily()
	facts, err := k.core.Py().QuantFacts(ctx, wire.QuantArgs{WeightsModule: q.Module, Source: q.Source, ReferenceDir: k.core.Model().Dir, NLayers: cfg.NLayers, Bound: q.Format.Bound(),
		CandidateDirs: q.CandidateDirs(), Keep: true, Family: family, EmbedScale: embedScale})
	if err != nil {
		if stop := orchestrator.WorkerFailure(err); stop != nil {
			return nil, chain.Outcome{}, stop
		}
		w := quant.LoaderRaised(q.Format, q.Use.Loader, filepath.Base(q.Module)+" raised: "+k.core.Explain("quant_weights", err))
		return w, chain.Outcome{Status: w.Status, Detail: w.Summary}, nil
	}
	if f := facts.ImportFailure; f != nil {
		return nil, chain.Outcome{}, q.ImportError(f)
	}
	w := quant.Judge(q.Format, &facts, quant.Expect{NLayers: cfg.NLayers, QKNorm: cfg.QKNorm, QKVBias: cfg.QKVBias, Family: family})
	w.CheckHeaderDTypes(q.BundleDTypes)
	w.Closeness = quant.MeasureCloseness(&facts, q.Use.Reference, q.Candidates)
	return w, chain.Outcome{Status: w.Status, Detail: w.Summary}, nil
}

// quantConfigStage is quantized gate 3: the module's hard-coded constants
// against the reference's config.json and the bundle's own.
func quantConfigStage(ctx context.Context, k *keyState) (*quant.Constants, chain.Outcome, error) {
	q := k.facts.folder
	consts, files := q.Constants()
	rt := q.RopeTables(filepath.Dir(q.Dir)) // what the folder's prefill and decode use
	rt.AddTheta(consts, files)
	var notes []string
	var rope *wire.QuantModuleFacts
	if ok, _ := pythonReady(k); ok {
		mf, err := k.core.Py().QuantModuleFacts(ctx, wire.QuantModuleArgs{WeightsModule: q.Module})
		if err != nil {
			if stop := orchestrator.WorkerFailure(err); stop != nil {
				return nil, chain.Outcome{}, stop
			}
			notes = append(notes, fmt.Sprintf("%s's config functions could not be called: %s", q.Use.Module, k.core.Explain("quant_config", err)))
		} else if f := mf.ImportFailure; f != nil {
			return nil, chain.Outcome{}, q.ImportError(f)
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
	c := quant.CheckConstantsFrom(q.Use.Module, consts, files, k.core.Analysis().Config, q.Bundle)
	c.CheckBundleConfig(k.core.Analysis().Config, q.Bundle)
	divs, tiles := q.Divisions()
	c.JudgeDivisions(divs, tiles, k.core.Analysis().Config)
	for _, n := range notes {
		c.FailWith("%s", n)
	}
	family, _ := k.core.Analysis().DeployedFamily()
	if family != "" && rope != nil {
		// A deployed family's module builds its RoPE table its own way
		// (Gemma per layer kind, Phi from the bundle's LongRoPE factors):
		// judged by the family's facts instead of the shared behaviour.
		f, err := k.core.Py().QuantFamilyFacts(ctx, wire.QuantFamilyArgs{WeightsModule: q.Module, Family: family, ReferenceDir: k.core.Model().Dir, Source: q.Source})
		if err != nil {
			if stop := orchestrator.WorkerFailure(err); stop != nil {
				return nil, chain.Outcome{}, stop
			}
			c.FailWith("family facts of %s: %s", q.Use.Module, k.core.Explain("quant_config", err))
		} else {
			c.JudgeFamily(family, &f, k.core.Analysis().Config, k.core.Analysis().Deployed)
			rt.FamilyJudged(q.Module) // the module's own tables were judged by the family's facts
		}
		rope = nil
	}
	from := ""
	if rope != nil {
		from = rt.JudgedFrom(q.Module, rope.RopeLUT, rope.RopeModule)
	}
	if rope != nil && (rope.RopeLUT || from != "") {
		if err := k.quantRopeBehaviour(ctx, c, rope, from); err != nil {
			return nil, chain.Outcome{}, err
		}
	}
	rt.Warn(c, c.Behaviour != nil)
	c.Conclude()
	return c, chain.Outcome{Status: c.Status, Detail: c.Summary}, nil
}

// quantRopeBehaviour judges the RoPE table the folder uses by behaviour, as
// for a bf16 module: the module's own (built for its *_config(), else
// LlamaConfig()), or the table and config of the module its prefill takes
// it from (from). A worker failure that is not the module's is returned.
func (k *keyState) quantRopeBehaviour(ctx context.Context, c *quant.Constants, rope *wire.QuantModuleFacts, from string) error {
	q := k.facts.folder
	fn := ""
	for name := range rope.Configs {
		if fn == "" || name < fn {
			fn = name
		}
	}
	args := wire.BehaviourArgs{WeightsModule: q.Module, ModelDir: k.core.Model().Dir, MaxSeq: k.core.Settings().MaxSeq, ConfigFunction: fn}
	if from != "" {
		args.WeightsModule, args.ConfigFunction = from, ""
		c.RopeFrom = from
	} else if rope.RMSNorm {
		args.HelpersModule = q.Module // its norms are the module's own
	}
	b, err := k.core.Py().BehaviourFacts(ctx, args)
	if err != nil {
		if stop := orchestrator.WorkerFailure(err); stop != nil {
			return stop
		}
		c.FailWith("behaviour facts of %s: %s", q.Use.Module, k.core.Explain("quant_config", err))
	} else {
		c.JudgeBehaviour(k.core.Analysis().Config, b, rope.RMSNorm && from == "")
	}
	return nil
}

// pairingStage checks the key's reference against the bundle's declared source.
func pairingStage(_ context.Context, k *keyState) (*quant.Pairing, chain.Outcome, error) {
	q := k.facts.folder
	var closeness []quant.Closeness
	if w := k.sections.weights; w != nil {
		closeness = w.Closeness
	}
	p := quant.CheckPairing(q.Use, q.Declared, closeness)
	return p, chain.Outcome{Status: p.Status, Detail: p.Summary}, nil
}
