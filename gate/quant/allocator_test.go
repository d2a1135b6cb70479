package quant_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"phase0/gate/quant"
	"phase0/internal/testenv"
	"phase0/python/worker"
	"phase0/wire"
)

// allocatorCase is one quantized gate 1 run on a fixture: the folder's
// module, its source and reference.
type allocatorCase struct {
	name string
	args wire.QuantArgs
}

// allocatorCases are every family's quantized fixtures (testenv's
// QuantFixtures and QuantFamilyFixtures): the Llama Q4NX bundles (clean in
// both header codecs and each negative), Qwen3's Q4NX bundle, Qwen2.5's
// Q4_0 on load, Llama's AWQ checkpoint, and every Gemma 3 and Phi-4-mini
// bundle, each as the run asks (keep: the tensors stay for gate 2).
func allocatorCases(t *testing.T) []allocatorCase {
	t.Helper()
	fx, fam := testenv.QuantFixtures(t), testenv.QuantFamilyFixtures(t)
	root := t.TempDir()
	testenv.CopyTestData(t, root, "quant")
	llms := filepath.Join(root, "llms")
	for _, name := range []string{"llama32_1b", "qwen3_0_6b", "qwen25_0_5b"} {
		testenv.CopyTestData(t, filepath.Join(llms, name), "upstream/"+name)
	}
	module := func(folder string) string { return filepath.Join(llms, folder, folder+"_weights.py") }
	bound := func(m string) wire.QuantBound {
		src, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		f, err := quant.Detect(src)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		return f.Bound()
	}
	var cases []allocatorCase
	add := func(name, folder, source, ref string, layers int, family string, embed float64) {
		m := module(folder)
		cases = append(cases, allocatorCase{name: name, args: wire.QuantArgs{WeightsModule: m, Source: source, ReferenceDir: ref,
			NLayers: layers, Bound: bound(m), Keep: true, Family: family, EmbedScale: embed}})
	}
	for _, b := range []string{"clean", "clean_q4nx", "random", "transposed", "swapped", "nibbles", "doubled_scale", "other_model"} {
		add("llama/"+b, "llama32_1b_q4nx", filepath.Join(fx, "bundles", b), filepath.Join(fx, "ref"), 2, "", 0)
	}
	cases[0].args.CandidateDirs = []string{filepath.Join(fx, "other")}
	add("qwen3/clean", "qwen3_8b_q4nx", filepath.Join(fx, "bundles", "qwen3"), filepath.Join(fx, "qwen3"), 2, "", 0)
	add("qwen2/q4_0", "qwen25_3b_q4", filepath.Join(fx, "qwen2"), filepath.Join(fx, "qwen2"), 2, "", 0)
	add("llama/awq", "llama32_1b_int4", filepath.Join(fx, "awq"), filepath.Join(fx, "ref"), 2, "", 0)
	for _, c := range []struct {
		family, folder string
		layers         int
		embed          float64
	}{{"gemma3", "gemma3_4b_q4nx", 6, 16}, {"phi3", "phi4_mini_q4nx", 2, 0}} {
		entries, err := os.ReadDir(filepath.Join(fam, "bundles", c.family))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			add(c.family+"/"+e.Name(), c.folder, filepath.Join(fam, "bundles", c.family, e.Name()), filepath.Join(fam, c.family), c.layers, c.family, c.embed)
		}
	}
	return cases
}

// gate1Run is what tests/quant_allocator_check.py reports of one run.
type gate1Run struct {
	Result string     `json:"result"` // op quant_facts's JSON text
	Error  string     `json:"error"`  // what it raised instead
	Loader string     `json:"loader"`
	Kept   [][3]any   `json:"kept"` // layer, field, sha256 of dtype, shape and bytes
	Reuse  reuseStats `json:"reuse"`
}

type reuseStats struct {
	Hits        int   `json:"hits"`
	Misses      int   `json:"misses"`
	ReusedBytes int64 `json:"reused_bytes"`
	CarvedBytes int64 `json:"carved_bytes"`
}

// TestQuantFactsAllocatorChangesNothing: the worker's NumPy allocator
// (python/bridge/reuse.c: its cache of freed blocks and the arena gate 1
// carves its kept tensors from) changes only speed. Quantized gate 1 runs
// on every family's fixtures in a real worker with the allocator and
// without it (docs/worker.md); the op's JSON result and every kept
// array's bytes must be the same.
func TestQuantFactsAllocatorChangesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Python")
	}
	cases := allocatorCases(t)
	sess, err := worker.Start(context.Background(), worker.Options{Python: testenv.Python(t),
		ExtraPath: []string{testenv.PyShim(), filepath.Join(testenv.PyShim(), "tests")}}, "quant_allocator_check")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	gate1 := func(c allocatorCase, allocator bool) gate1Run {
		t.Helper()
		var r gate1Run
		if _, err := sess.Call("gate1", map[string]any{"args": c.args, "allocator": allocator}, &r); err != nil {
			t.Fatalf("%s (allocator %t): %v", c.name, allocator, err)
		}
		return r
	}
	var handed, carved int64
	for _, c := range cases {
		off, on := gate1(c, false), gate1(c, true)
		if off.Result != on.Result || off.Error != on.Error {
			t.Errorf("%s: quant_facts differs with the allocator:\nwithout: %s%s\nwith:    %s%s", c.name, off.Result, off.Error, on.Result, on.Error)
		}
		if off.Result == "" && off.Error == "" {
			t.Errorf("%s: no result", c.name)
		}
		a, _ := json.Marshal(off.Kept)
		b, _ := json.Marshal(on.Kept)
		if string(a) != string(b) || off.Loader != on.Loader {
			t.Errorf("%s: the kept tensors differ with the allocator:\nwithout: %s %s\nwith:    %s %s", c.name, off.Loader, a, on.Loader, b)
		}
		if off.Error == "" && len(off.Kept) == 0 {
			t.Errorf("%s: gate 1 kept nothing for gate 2", c.name)
		}
		if off.Reuse != (reuseStats{}) {
			t.Errorf("%s: the allocator ran while hidden: %+v", c.name, off.Reuse)
		}
		handed += on.Reuse.ReusedBytes
		carved += on.Reuse.CarvedBytes
		t.Logf("%s: %d kept, allocator %+v", c.name, len(on.Kept), on.Reuse)
	}
	if handed == 0 || carved == 0 {
		t.Errorf("the allocator reused %d bytes and carved %d out of its arena over every fixture: the comparison would not see it", handed, carved)
	}
}
