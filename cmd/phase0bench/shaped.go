package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"phase0/internal/testenv"
)

const (
	shapedRuns       = 2   // paired run --fresh / plain script
	shapedRunRatio   = 2.5 // run --fresh --reference-steps 0 / plain (issue 22)
	shapedRSSRatio   = 1.15
	shapedSteps      = 4   // greedy steps per prompt in the reference rows (32 in a real run)
	shapedLoopRatio  = 1.1 // recording's decode loop / the plain loop
	shapedPerplexity = "100"
)

// plainLoop is the reference recording's work without phase0: the bundled
// HfRunner, the recording's own prompt token ids, prefill then greedy
// decode_step calls, timed from the first prefill to the last step.
const plainLoop = `import json
import sys
import time
from types import SimpleNamespace

import numpy as np
from safetensors.numpy import load_file

from phase0_shim.hf_runner import HfRunner


def main(model_dir, reference_dir):
    meta = json.load(open(f"{reference_dir}/reference.json"))
    tensors = load_file(f"{reference_dir}/reference.safetensors")
    prompts = [tensors[f"prompt.{i}.tokens"] for i in range(len(meta["prompts"]))]
    steps = int(meta["decode_steps"])
    config = json.load(open(f"{model_dir}/config.json"))
    cfg = SimpleNamespace(
        n_layers=config["num_hidden_layers"],
        emb_dim=config["hidden_size"],
        n_kv_heads=config["num_key_value_heads"],
        head_dim=config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"],
    )
    runner = HfRunner(model_dir, cfg, max(len(p) for p in prompts) + steps, lite_mode=True)
    start = time.perf_counter()
    chosen = []
    for tokens in prompts:
        token = runner.prefill(np.asarray(tokens, dtype=np.int64)).top1_token
        ids = [token]
        for step in range(1, steps):
            token = runner.decode_step(token, len(tokens) + step - 1).top1_token
            ids.append(token)
        chosen.append(ids)
    seconds = time.perf_counter() - start
    same = all(list(map(int, tensors[f"prompt.{i}.chosen"])) == ids for i, ids in enumerate(chosen))
    print(json.dumps({"seconds": seconds, "same_tokens": same}))


main(sys.argv[1], sys.argv[2])
`

// shaped measures Phase 0 on the Llama-3.2-3B-shaped checkpoint (random
// bf16 weights, built once and cached; the default model's tokenizer, else a
// tiny model's): `run --fresh --reference-steps 0` and its peak RSS against
// the plain transformers script, and the reference recording's decode loop
// against a plain loop of the same HfRunner calls. Random weights fail gate 2
// (near-uniform logits; the perplexity limit is lifted), so the run's status
// is FAIL: what is timed is that every stage ran.
func (b *bench) shaped() error {
	checkpoint, err := testenv.ShapedModel(b.python, loaderPreset)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "phase0bench-3b-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	modelDir, tokDir, err := b.shapedModelDir(dir, checkpoint)
	if err != nil {
		return err
	}
	script := filepath.Join(dir, "plain_baseline.py")
	if err := os.WriteFile(script, []byte(plainBaseline), 0o644); err != nil {
		return err
	}
	env := []string{"PHASE0_PYSHIM=" + filepath.Join(b.root, "python", "pyshim")}
	loadBefore := loadAverage()

	var tRun, tPlain []time.Duration
	var rssRun, rssPlain int64
	var stages []string
	for range shapedRuns { // interleaved
		r, rep, err := b.runReport(dir, env, b.phase0, "run", modelDir, "--python", b.python, "--out-dir", filepath.Join(dir, "ws"),
			"--prompt", baselinePrompt, "--reference-steps", "0", "--fresh", "--max-perplexity-ratio", shapedPerplexity, "--json")
		if err != nil {
			return err
		}
		tRun, rssRun = append(tRun, r.wall), max(rssRun, r.maxRSS)
		stages = append(stages, fmt.Sprintf("%.1f s: %s (prefill %.1f s, calibration passage %.1f s)",
			r.wall.Seconds(), stageList(rep.Stages), rep.Gates.Baseline.SecondsPrefill, rep.Gates.Baseline.SecondsCalibration))
		p, err := runChild(dir, nil, b.python, script, modelDir, baselinePrompt)
		if err != nil {
			return err
		}
		tPlain, rssPlain = append(tPlain, p.wall), max(rssPlain, p.maxRSS)
	}
	mr, mp := median(tRun), median(tPlain)
	label := "3B shape"
	b.add(fmt.Sprintf("%s: run --fresh --reference-steps 0 (median of %d)", label, shapedRuns), fmt.Sprintf("%.1f s", mr.Seconds()), "-", true)
	b.add(fmt.Sprintf("%s: plain transformers script (median of %d)", label, shapedRuns), fmt.Sprintf("%.1f s", mp.Seconds()), "-", true)
	ratio := mr.Seconds() / mp.Seconds()
	b.add(label+": run --fresh / plain", fmt.Sprintf("%.3fx", ratio), fmt.Sprintf("<= %.1fx", shapedRunRatio), ratio <= shapedRunRatio)
	rss := float64(rssRun) / float64(rssPlain)
	b.add(label+": peak RSS run / plain", fmt.Sprintf("%.2fx (%.2f / %.2f GB)", rss, float64(rssRun)*1024/1e9, float64(rssPlain)*1024/1e9),
		fmt.Sprintf("<= %.2fx", shapedRSSRatio), rss <= shapedRSSRatio)
	b.note("3B-shape runs: %s", strings.Join(stages, "; "))

	load, diagnosis, err := b.shapedReference(dir, env, modelDir, label)
	if err != nil {
		return err
	}
	b.note("3B-shape rows: %s with the tokenizer of %s; the recording also loads the model (%.1f s) and runs the diagnosis prefill (%.1f s); load average %s before, %s after",
		checkpoint, tokDir, load, diagnosis, loadBefore, loadAverage())
	return nil
}

// shapedReference times phase0's reference recording at the 3B shape, then
// the plain loop over the very token ids it recorded; it returns the
// recording's load and diagnosis seconds for the note.
func (b *bench) shapedReference(dir string, env []string, modelDir, label string) (load, diagnosis float64, err error) {
	out := filepath.Join(dir, "reference")
	if _, _, err := b.runReport(dir, env, b.phase0, "reference", modelDir, "--python", b.python, "--out", out, "--refresh",
		"--reference-steps", fmt.Sprint(shapedSteps), "--json"); err != nil {
		return 0, 0, err
	}
	var meta struct {
		Prompts []string `json:"prompts"`
		Threads int      `json:"torch_threads"`
		Seconds struct {
			Load, Decode, Diagnosis float64
		} `json:"seconds"`
	}
	data, err := os.ReadFile(filepath.Join(out, "reference.json"))
	if err != nil {
		return 0, 0, err
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", filepath.Join(out, "reference.json"), err)
	}
	loopScript := filepath.Join(dir, "plain_loop.py")
	if err := os.WriteFile(loopScript, []byte(plainLoop), 0o644); err != nil {
		return 0, 0, err
	}
	r, err := runChild(dir, []string{"PYTHONPATH=" + filepath.Join(b.root, "python", "pyshim")}, b.python, loopScript, modelDir, out)
	if err != nil {
		return 0, 0, err
	}
	var loop struct {
		Seconds float64 `json:"seconds"`
		Same    bool    `json:"same_tokens"`
	}
	if err := json.Unmarshal(r.stdout, &loop); err != nil {
		return 0, 0, fmt.Errorf("plain loop printed %q: %w", tail(string(r.stdout), 300), err)
	}
	what := fmt.Sprintf("%d prompts × %d steps", len(meta.Prompts), shapedSteps)
	b.add(fmt.Sprintf("%s: reference recording, %s (decode loop; %d torch threads)", label, what, meta.Threads), fmt.Sprintf("%.1f s", meta.Seconds.Decode), "-", true)
	b.add(fmt.Sprintf("%s: plain HfRunner loop, same token ids", label), fmt.Sprintf("%.1f s", loop.Seconds), "-", true)
	lr := meta.Seconds.Decode / loop.Seconds
	b.add(label+": recording / plain loop", fmt.Sprintf("%.3fx", lr), fmt.Sprintf("<= %.1fx", shapedLoopRatio), lr <= shapedLoopRatio)
	b.add(label+": plain loop chose the recorded tokens", yesNo(loop.Same), "yes", loop.Same)
	return meta.Seconds.Load, meta.Seconds.Diagnosis, nil
}

// shapedModelDir is a folder in dir with the checkpoint's files linked and a
// tokenizer copied in: the default model's when `make phase0` converted it,
// else a tiny test model's.
func (b *bench) shapedModelDir(dir, checkpoint string) (modelDir, tokDir string, err error) {
	tokDir = defaultModelDir()
	if tokDir == "" {
		pyshim := filepath.Join(b.root, "python", "pyshim")
		tokDir = filepath.Join(dir, "tiny-llama")
		if _, err := runChild(pyshim, []string{"PYTHONPATH=" + pyshim}, b.python, "-m", "phase0_testmodels", "--family", "llama", "--out", tokDir); err != nil {
			return "", "", fmt.Errorf("building a tiny model for its tokenizer: %w", err)
		}
	}
	modelDir = filepath.Join(dir, "llama-3.2-3b")
	if err := os.Mkdir(modelDir, 0o755); err != nil {
		return "", "", err
	}
	entries, err := os.ReadDir(checkpoint)
	if err != nil {
		return "", "", err
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(checkpoint, e.Name()), filepath.Join(modelDir, e.Name())); err != nil {
			return "", "", err
		}
	}
	toks, err := filepath.Glob(filepath.Join(tokDir, "tokenizer*"))
	if err != nil || len(toks) == 0 {
		return "", "", fmt.Errorf("%s holds no tokenizer files (%v)", tokDir, err)
	}
	for _, f := range toks {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", "", err
		}
		if err := os.WriteFile(filepath.Join(modelDir, filepath.Base(f)), data, 0o644); err != nil {
			return "", "", err
		}
	}
	return modelDir, tokDir, nil
}

// shapedReport is the part of a phase0 --json report the 3B rows read.
type shapedReport struct {
	Stages []stageTime `json:"stages"`
	Gates  struct {
		Baseline struct {
			SecondsPrefill     float64 `json:"seconds_prefill"`
			SecondsCalibration float64 `json:"seconds_calibration"`
		} `json:"hf_baseline"`
	} `json:"gates"`
}

// stageTime is one stage of a phase0 --json report.
type stageTime struct {
	Name    string  `json:"name"`
	Status  string  `json:"status"`
	Seconds float64 `json:"seconds"`
}

func stageList(stages []stageTime) string {
	var parts []string
	for _, s := range stages {
		if s.Seconds >= 0.5 {
			parts = append(parts, fmt.Sprintf("%s %.1f s", s.Name, s.Seconds))
		}
	}
	return strings.Join(parts, ", ")
}

// runReport runs a phase0 command whose gates may fail (exit status 1) and
// returns its report; exit status 2 (could not evaluate) or a stage that
// errored is an error.
func (b *bench) runReport(dir string, env []string, argv ...string) (childRun, *shapedReport, error) {
	r, err := runChildExit(dir, env, 1, argv...)
	if err != nil {
		return r, nil, err
	}
	var rep shapedReport
	if err := json.Unmarshal(r.stdout, &rep); err != nil {
		return r, nil, fmt.Errorf("%s %s: report is not JSON: %w", filepath.Base(argv[0]), argv[1], err)
	}
	for _, s := range rep.Stages {
		if s.Status == "ERROR" {
			return r, nil, fmt.Errorf("%s %s: stage %s errored", filepath.Base(argv[0]), argv[1], s.Name)
		}
	}
	return r, &rep, nil
}
