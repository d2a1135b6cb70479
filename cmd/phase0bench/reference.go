package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"phase0/gate/compare"
	"phase0/gate/verdict"
)

// compareTarget is what `phase0 compare` may take in-process on a real
// model's reference: it reads two small files and walks 5×32 steps.
const compareTarget = 100 * time.Millisecond

// reference times recording the reference (5 prompts × 32 greedy steps with
// top-5, plus the lite_mode=False intermediates) against the plain one-prompt
// prefill, re-running with the key matching (no model load), the fp32
// self-check, and `phase0 compare` on the result. The default model is used
// when `make phase0` has converted it, else a tiny one.
func (b *bench) reference() error {
	dir, err := os.MkdirTemp("", "phase0bench-reference-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	pyshim := filepath.Join(b.root, "python", "pyshim")
	label, modelDir := "SmolLM2-135M", defaultModelDir()
	if modelDir == "" {
		label, modelDir = "tiny llama", filepath.Join(dir, "tiny-llama")
		if _, err := runChild(pyshim, []string{"PYTHONPATH=" + pyshim}, b.python, "-m", "phase0_testmodels", "--family", "llama", "--out", modelDir); err != nil {
			return fmt.Errorf("building the tiny model: %w", err)
		}
		b.note("reference rows ran on a tiny model: run `make phase0` once to measure the default SmolLM2-135M")
	}
	script := filepath.Join(dir, "plain_baseline.py")
	if err := os.WriteFile(script, []byte(plainBaseline), 0o644); err != nil {
		return err
	}
	env := []string{"PHASE0_PYSHIM=" + pyshim}
	bf16, fp32 := filepath.Join(dir, "bf16"), filepath.Join(dir, "fp32")
	record := func(args ...string) (time.Duration, *referenceReport, error) {
		argv := append([]string{b.phase0, "reference", modelDir, "--python", b.python, "--json"}, args...)
		r, err := runChild(dir, env, argv...)
		if err != nil {
			return 0, nil, err
		}
		var rep referenceReport
		if err := json.Unmarshal(r.stdout, &rep); err != nil || rep.Reference == nil {
			return 0, nil, fmt.Errorf("phase0 reference %v: no reference in the report (%v)", args, err)
		}
		return r.wall, &rep, nil
	}

	tRecord, rep, err := record("--out", bf16, "--refresh")
	if err != nil {
		return err
	}
	plain, err := runChild(dir, nil, b.python, script, modelDir, baselinePrompt)
	if err != nil {
		return err
	}
	b.add("reference, "+label+": record 5 prompts × 32 steps + intermediates", fmt.Sprintf("%.2f s (%d KiB)", tRecord.Seconds(), rep.Reference.Bytes/1024), "-", rep.Status == verdict.Pass)
	b.add("reference, "+label+": plain one-prompt prefill", fmt.Sprintf("%.2f s", plain.wall.Seconds()), "-", true)
	b.add("reference, "+label+": record / plain prefill", fmt.Sprintf("%.2fx", tRecord.Seconds()/plain.wall.Seconds()), "-", true)

	tReuse, rep, err := record("--out", bf16)
	if err != nil {
		return err
	}
	b.add("reference, "+label+": re-run, key matches (no model load)", fmt.Sprintf("%.2f s", tReuse.Seconds()), "< plain prefill", rep.Reference.Reused && tReuse < plain.wall)

	if _, _, err = record("--out", fp32, "--dtype", "float32", "--refresh"); err != nil {
		return err
	}
	start := time.Now()
	res := compare.Files(bf16, fp32)
	tCompare := time.Since(start)
	minCos := 1.0
	for _, l := range res.Layers {
		if l.Note == "" {
			minCos = min(minCos, float64(l.CosMin))
		}
	}
	b.add("compare, "+label+": bf16 vs fp32 self-check", string(res.Status)+" ("+res.Summary+")", "PASS", res.Status == verdict.Pass)
	b.add("compare, "+label+": lowest per-layer cosine (min over positions)", fmt.Sprintf("%.5f", minCos), ">= 0.99", minCos >= 0.99)
	b.add("compare, "+label+": in-process", ms(tCompare), fmt.Sprintf("<= %d ms", compareTarget.Milliseconds()), tCompare <= compareTarget)
	cli, err := runChild(dir, nil, b.phase0, "compare", bf16, fp32, "--json")
	if err != nil {
		return err
	}
	b.add("compare, "+label+": phase0 compare process", ms(cli.wall), "-", true)
	return nil
}

// referenceReport is the part of `phase0 reference --json` the bench reads.
type referenceReport struct {
	Status    verdict.Status `json:"status"`
	Reference *struct {
		Reused bool  `json:"reused"`
		Bytes  int64 `json:"bytes"`
	} `json:"reference"`
}
