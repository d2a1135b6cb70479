package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// quantSetup builds (once; the checkpoint and the bundle are cached) the
// real-shaped Llama-3.2-1B checkpoint of pyshim/phase0_benchmodels, its Q4NX
// bundle packed by our own packer, and the upstream-style quantized tree,
// and prints where they are.
const quantSetup = `import hashlib, json, os, sys, tempfile
from pathlib import Path
sys.path.insert(0, str(Path("tests").resolve()))
from phase0_benchmodels.shaped import shaped_llama_1b
import phase0_testmodels.quant as packers
from phase0_testmodels.quant.bundle import pack_bundle
from quant_helpers import assemble_tree
ref = shaped_llama_1b()
key = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(Path(packers.__file__).parent.glob("*.py")))).hexdigest()[:12]
bundle = ref.parent / (ref.name + "-q4nx-" + key) / "model.q4nx"
if not bundle.is_file():
    bundle.parent.mkdir(parents=True, exist_ok=True)
    tmp = bundle.with_name("model.q4nx.tmp%d" % os.getpid())
    pack_bundle(ref, tmp)
    os.replace(tmp, bundle)
tree = assemble_tree(Path(sys.argv[1]) / "tree")
# The fixture module hard-codes the tiny test dimensions, as upstream's
# hard-codes Llama-3.2-1B's: give it upstream's.
module = tree / "llama32_1b_q4nx" / "llama32_1b_q4nx_weights.py"
dims = {"D": 2048, "DQ": 2048, "DK": 512, "DV": 512, "DH": 64, "N_Q_HEADS": 32, "N_KV_HEADS": 8, "INTER": 8192, "VOCAB": 128256, "N_LAYERS": 16}
lines = [(ln.split(" = ")[0] + " = " + str(dims[ln.split(" = ")[0]])) if ln.split(" = ")[0] in dims else ln for ln in module.read_text().splitlines()]
module.write_text("\n".join(lines) + "\n")
print(json.dumps({"ref": str(ref), "bundle": str(bundle.parent), "module": str(tree / "llama32_1b_q4nx" / "llama32_1b_q4nx_weights.py")}))
`

const (
	quantLoaderRuns = 2
	quantMaxRatio   = 1.5
	// Quantized gate 2 with its twin against the same stage without it:
	// at most twice the time, the same peak RSS (± 5 %).
	twinMaxRatio    = 2.0
	twinMaxRSSRatio = 1.05
)

// quantGate measures quantized gate 1's facts (the folder's own loader and
// every statistic) against the loader alone on the real-shaped 1B bundle,
// and its peak RSS against the bf16 reference's model stage (load and a
// prefill), each in a child of its own.
func (b *bench) quantGate() error {
	dir, err := os.MkdirTemp("", "phase0bench-quant-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	pyshim := filepath.Join(b.root, "python", "pyshim")
	env := []string{"PYTHONPATH=" + pyshim, "PYTHONDONTWRITEBYTECODE=1"}
	r, err := runChild(pyshim, env, b.python, "-c", quantSetup, dir)
	if err != nil {
		return err
	}
	var where struct{ Ref, Bundle, Module string }
	if err := json.Unmarshal(r.stdout, &where); err != nil {
		return fmt.Errorf("quant setup printed %q: %w", tail(string(r.stdout), 300), err)
	}
	type result struct {
		Seconds float64 `json:"seconds"`
		Tensors int     `json:"tensors"`
		MaxRSS  int64   `json:"maxrss_kb"`
	}
	measure := func(mode string) (result, error) {
		var res result
		r, err := runChild(pyshim, env, b.python, "-m", "phase0_benchmodels.quant_bench", mode, where.Module, where.Bundle, where.Ref, "16")
		if err != nil {
			return res, err
		}
		if err := json.Unmarshal(r.stdout, &res); err != nil {
			return res, fmt.Errorf("quant_bench %s printed %q: %w", mode, tail(string(r.stdout), 300), err)
		}
		return res, nil
	}
	var loader result
	for i := range quantLoaderRuns {
		l, err := measure("loader")
		if err != nil {
			return err
		}
		if i == 0 || l.Seconds < loader.Seconds {
			loader = l
		}
	}
	gate, err := measure("gate")
	if err != nil {
		return err
	}
	model, err := measure("model")
	if err != nil {
		return err
	}
	e2e, err := measure("e2e")
	if err != nil {
		return err
	}
	noTwin, err := measure("e2e-notwin")
	if err != nil {
		return err
	}
	gib := func(kb int64) string { return fmt.Sprintf("%.2f GiB", float64(kb)/(1<<20)) }
	twinLabel := "quantized gate 2, Llama-3.2-1B shape, Q4NX"
	tr, rr := e2e.Seconds/noTwin.Seconds, float64(e2e.MaxRSS)/float64(noTwin.MaxRSS)
	b.add(twinLabel+": with the twin vs without (load, prefills, patching)", fmt.Sprintf("%.1f s vs %.1f s (%.2fx)", e2e.Seconds, noTwin.Seconds, tr),
		fmt.Sprintf("<= %.1fx", twinMaxRatio), tr <= twinMaxRatio)
	b.add(twinLabel+": peak RSS with the twin vs without", fmt.Sprintf("%s vs %s (%.3fx)", gib(e2e.MaxRSS), gib(noTwin.MaxRSS), rr),
		fmt.Sprintf("<= %.2fx", twinMaxRSSRatio), rr <= twinMaxRSSRatio)
	label := "quantized gate 1, Llama-3.2-1B shape, Q4NX"
	b.add(label+": the folder's own loader alone (best of 2)", fmt.Sprintf("%.1f s, %d tensors, peak RSS %s", loader.Seconds, loader.Tensors, gib(loader.MaxRSS)), "-", true)
	ratio := gate.Seconds / loader.Seconds
	b.add(label+": gate 1 facts (loader + every statistic)", fmt.Sprintf("%.1f s (%.2fx the loader), %d tensors", gate.Seconds, ratio, gate.Tensors),
		fmt.Sprintf("<= %.1fx", quantMaxRatio), ratio <= quantMaxRatio)
	b.add(label+": gate 1 peak RSS vs the bf16 model stage", fmt.Sprintf("%s vs %s", gib(gate.MaxRSS), gib(model.MaxRSS)), "<=", gate.MaxRSS <= model.MaxRSS)
	b.note("quantized rows: %s packed by phase0_testmodels.quant into %s, read by the upstream-style llama32_1b_q4nx module; load average %s", where.Ref, where.Bundle, loadAverage())
	return nil
}
