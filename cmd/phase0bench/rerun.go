package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"phase0/read/fingerprint"
	"time"

	"phase0/python/worker"
)

const (
	rerunRuns       = 5
	rerunRatio      = 0.3 // repeat run / python -c 'import torch'
	freshRuns       = 3
	freshRatio      = 1.0 // run --fresh / the plain transformers script
	finalizeRuns    = 3
	importTorchOnly = "import torch"
)

// rerun measures `phase0 run` twice over: repeated on an unchanged model
// (the recorded verdict is reused; no Python starts) against the cheapest
// Python that could answer anything (`python -c 'import torch'`), and with
// --fresh (everything runs) against the plain transformers script. It also
// times the worker's exit with and without the interpreter's full shutdown.
func (b *bench) rerun() error {
	dir, err := os.MkdirTemp("", "phase0bench-rerun-")
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
	env := []string{"PHASE0_PYSHIM=" + pyshim}
	run := func(extra ...string) (childRun, error) { return b.rerunOnce(dir, env, modelDir, extra...) }
	if _, err := run("--fresh"); err != nil { // records the verdict to reuse
		return err
	}

	var tRepeat, tImport []time.Duration
	for range rerunRuns {
		r, err := run()
		if err != nil {
			return err
		}
		tRepeat = append(tRepeat, r.wall)
		if r, err = runChild(dir, nil, b.python, "-c", importTorchOnly); err != nil {
			return err
		}
		tImport = append(tImport, r.wall)
	}
	mr, mi := median(tRepeat), median(tImport)
	ratio := mr.Seconds() / mi.Seconds()
	b.add("repeat run, unchanged tiny llama (reused, median of 5)", ms(mr), "-", true)
	b.add("python -c 'import torch' (median of 5)", ms(mi), "-", true)
	b.add("repeat run / import torch", fmt.Sprintf("%.3fx", ratio), fmt.Sprintf("<= %.1fx", rerunRatio), ratio <= rerunRatio)
	if err := b.stampCost("tiny llama", filepath.Join(dir, "ws")); err != nil {
		b.fail("reuse stamps, tiny llama", err)
	}

	var tFresh, tPlain []time.Duration
	for range freshRuns { // interleaved
		r, err := run("--fresh")
		if err != nil {
			return err
		}
		tFresh = append(tFresh, r.wall)
		if r, err = runChild(dir, nil, b.python, script, modelDir, baselinePrompt); err != nil {
			return err
		}
		tPlain = append(tPlain, r.wall)
	}
	mf, mp := median(tFresh), median(tPlain)
	ratio = mf.Seconds() / mp.Seconds()
	b.add("run --fresh, tiny llama (median of 3)", fmt.Sprintf("%.2f s", mf.Seconds()), "-", true)
	b.add("plain transformers script (median of 3)", fmt.Sprintf("%.2f s", mp.Seconds()), "-", true)
	b.add("run --fresh / plain script", fmt.Sprintf("%.3fx", ratio), fmt.Sprintf("<= %.1fx", freshRatio), ratio <= freshRatio)
	return b.workerExit()
}

// rerunOnce is one `phase0 run` of the tiny model with extra flags: a PASS,
// reused exactly when not --fresh.
func (b *bench) rerunOnce(dir string, env []string, modelDir string, extra ...string) (childRun, error) {
	// The reference recording (5 prompts × 32 greedy steps for the later
	// phases) has its own rows; here run does what the plain script does
	// and Phase 0's gates on top.
	argv := append([]string{b.phase0, "run", modelDir, "--python", b.python, "--out-dir", filepath.Join(dir, "ws"),
		"--prompt", baselinePrompt, "--reference-steps", "0", "--json"}, extra...)
	r, err := runChild(dir, env, argv...)
	if err != nil {
		return r, err
	}
	var rep struct {
		Status     string `json:"status"`
		ReusedFrom *struct {
			Path string `json:"path"`
		} `json:"reused_from"`
		Stages []struct {
			Name string `json:"name"`
		} `json:"stages"`
	}
	if err := json.Unmarshal(r.stdout, &rep); err != nil {
		return r, fmt.Errorf("report is not JSON: %w", err)
	}
	if rep.Status != "PASS" {
		return r, fmt.Errorf("phase0 run %v: status %s", extra, rep.Status)
	}
	reused := rep.ReusedFrom != nil && len(rep.Stages) == 2 && rep.Stages[1].Name == "reuse" // after llms_dir
	if fresh := len(extra) > 0; fresh == reused {
		return r, fmt.Errorf("phase0 run %v: reused_from %v with %d stages, want reuse only without --fresh", extra, rep.ReusedFrom, len(rep.Stages))
	}
	return r, nil
}

// workerExit times closing a worker that imported torch: the child exits
// without the interpreter's shutdown (as phase0 now does) against
// PHASE0_WORKER_FINALIZE=1 (Py_FinalizeEx first, as before), interleaved.
func (b *bench) workerExit() error {
	closeAfterTorch := func(finalize bool) (time.Duration, error) {
		opts := worker.Options{
			Python: b.python, ExtraPath: []string{filepath.Join(b.root, "python", "worker", "testdata")},
			Timeout: 2 * time.Minute, Exe: []string{b.phase0, worker.Subcommand},
		}
		if finalize {
			opts.Env = []string{worker.EnvFinalize + "=1"}
		}
		sess, err := worker.Start(context.Background(), opts, testModule)
		if err != nil {
			return 0, err
		}
		defer sess.Close()
		if _, err := sess.Call("torch_sum", map[string]int{"n": 5}, nil); err != nil {
			return 0, err
		}
		start := time.Now()
		sess.Close()
		return time.Since(start), nil
	}
	var fast, final []time.Duration
	for range finalizeRuns {
		d, err := closeAfterTorch(false)
		if err != nil {
			return err
		}
		fast = append(fast, d)
		if d, err = closeAfterTorch(true); err != nil {
			return err
		}
		final = append(final, d)
	}
	mf, mF := median(fast), median(final)
	b.add("worker close after import torch: exit without Py_FinalizeEx (median of 3)", ms(mf), "-", true)
	b.add("worker close after import torch: PHASE0_WORKER_FINALIZE=1 (median of 3)", ms(mF), "-", true)
	b.add("worker exit without Py_FinalizeEx saves", ms(mF-mf), "> 0", mF > mf)
	return nil
}

// stampCost times, in-process, what a reuse check stamps for the verdict
// recorded under wsRoot: the model folder and every recorded Python source,
// import folder and .pth file (median of 5, after one warm-up).
func (b *bench) stampCost(label, wsRoot string) error {
	found, err := filepath.Glob(filepath.Join(wsRoot, "*", "docs", "development_progress", "phase0", "inputs.json"))
	if err != nil || len(found) != 1 {
		return fmt.Errorf("want one inputs.json under %s, found %v (%v)", wsRoot, found, err)
	}
	data, err := os.ReadFile(found[0])
	if err != nil {
		return err
	}
	var rec struct {
		Inputs struct {
			Model struct {
				Dir string `json:"dir"`
			} `json:"model"`
			Sources *fingerprint.Sources `json:"sources"`
		} `json:"inputs"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return fmt.Errorf("%s: %w", found[0], err)
	}
	if rec.Inputs.Sources == nil {
		return fmt.Errorf("%s records no sources", found[0])
	}
	var times []time.Duration
	var nModel int
	for i := range 6 {
		start := time.Now()
		files, err := fingerprint.Tree(rec.Inputs.Model.Dir, fingerprint.TreeOptions{})
		if err != nil {
			return err
		}
		_ = rec.Inputs.Sources.Restamp()
		if i > 0 {
			times = append(times, time.Since(start))
		}
		nModel = len(files)
	}
	src := rec.Inputs.Sources
	b.add(fmt.Sprintf("reuse stamps, %s: %d model files, %d Python sources, %d import folders (median of 5)", label, nModel, len(src.Files), len(src.Listings)),
		ms(median(times)), "-", true)
	return nil
}
