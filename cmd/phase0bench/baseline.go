package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

const (
	baselineRuns   = 3
	baselineRatio  = 1.05
	baselinePrompt = "The capital of France is"
)

// plainBaseline is the same reference work without phase0: tokenize the
// prompt, load the checkpoint in bf16, one forward, last logits as float32.
const plainBaseline = `import sys

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer


def main(model_dir: str, prompt: str) -> None:
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    ids = tokenizer.encode(prompt)
    model = AutoModelForCausalLM.from_pretrained(
        model_dir, dtype=torch.bfloat16, low_cpu_mem_usage=True
    )
    model.eval()
    with torch.inference_mode():
        out = model(torch.tensor([ids], dtype=torch.long))
    logits = out.logits[0, -1].float()
    print(int(torch.argmax(logits)), transformers.__version__)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
`

// baseline compares `phase0 baseline` on a tiny model with a plain Python
// script doing the same reference work. The model is tiny, so both times are
// dominated by Python start-up and imports: this measures phase0's fixed
// overhead, not the cost of a forward pass.
func (b *bench) baseline() error {
	dir, err := os.MkdirTemp("", "phase0bench-baseline-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	pyshim := filepath.Join(b.root, "python", "pyshim")
	modelDir := filepath.Join(dir, "tiny-llama")
	if _, err := runChild(pyshim, []string{"PYTHONPATH=" + pyshim},
		b.python, "-m", "phase0_testmodels", "--family", "llama", "--out", modelDir); err != nil {
		return fmt.Errorf("building the tiny model: %w", err)
	}
	script := filepath.Join(dir, "plain_baseline.py")
	if err := os.WriteFile(script, []byte(plainBaseline), 0o644); err != nil {
		return err
	}

	if err := b.compareBaseline("tiny llama", dir, modelDir, script); err != nil {
		return err
	}
	b.note("the tiny model (2 layers, 64 wide) measures fixed overhead (Python start-up, imports, the Go gates), not a forward pass")
	// The default model is a real 135M checkpoint; it is measured when make
	// phase0 has already converted it (converting here would dominate the bench).
	if real := defaultModelDir(); real != "" {
		if err := b.compareBaseline("SmolLM2-135M", dir, real, script); err != nil {
			return err
		}
	} else {
		b.note("run `make phase0` once to add the same comparison on the default SmolLM2-135M model")
	}
	return nil
}

// defaultModelDir is the converted default model in phase0's cache, or "".
func defaultModelDir() string {
	cache := os.Getenv("PHASE0_CACHE")
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		cache = filepath.Join(base, "phase0")
	}
	dir := filepath.Join(cache, "models", "SmolLM2-135M-Instruct")
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		return ""
	}
	return dir
}

// compareBaseline times `phase0 baseline` against the plain script on one model.
func (b *bench) compareBaseline(label, dir, modelDir, script string) error {
	pyshim := filepath.Join(b.root, "python", "pyshim")
	phase0Argv := []string{b.phase0, "baseline", modelDir, "--python", b.python, "--prompt", baselinePrompt, "--json"}
	phase0Env := []string{"PHASE0_PYSHIM=" + pyshim}
	plainArgv := []string{b.python, script, modelDir, baselinePrompt}

	var tPhase0, tPlain []time.Duration
	status := ""
	for range baselineRuns { // interleaved, so drift on a shared machine hits both alike
		r, err := runChild(dir, phase0Env, phase0Argv...)
		if err != nil {
			return err
		}
		if status, err = reportStatus(r.stdout); err != nil {
			return err
		}
		tPhase0 = append(tPhase0, r.wall)
		if r, err = runChild(dir, nil, plainArgv...); err != nil {
			return err
		}
		tPlain = append(tPlain, r.wall)
	}
	mp, mq := median(tPhase0), median(tPlain)
	ratio := mp.Seconds() / mq.Seconds()
	b.add("baseline, "+label+": phase0 baseline (median of 3)", fmt.Sprintf("%.2f s", mp.Seconds()), "-", true)
	b.add("baseline, "+label+": plain python (median of 3)", fmt.Sprintf("%.2f s", mq.Seconds()), "-", true)
	b.add("baseline overhead, "+label+" (phase0 / plain)", fmt.Sprintf("%.3fx", ratio), "<= 1.05x", ratio <= baselineRatio)
	b.add("baseline report status, "+label, status, "PASS", status == "PASS")
	return nil
}
