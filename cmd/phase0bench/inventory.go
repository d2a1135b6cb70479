package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"phase0/read/safetensors"
)

const (
	scalingRuns   = 5
	scalingRatio  = 0.25 // phase0 inspect / python header reader, at the largest size
	loadRateFloor = 1e6  // tensors/s, in-process Load
)

// pythonHeaderReader is the plain way to list a checkpoint's tensors: read
// the index, then each shard's 8-byte length and JSON header.
const pythonHeaderReader = `import json, os, struct, sys

d = sys.argv[1]
with open(os.path.join(d, "model.safetensors.index.json")) as f:
    shards = sorted(set(json.load(f)["weight_map"].values()))
n = 0
for s in shards:
    with open(os.path.join(d, s), "rb") as f:
        (k,) = struct.unpack("<Q", f.read(8))
        h = json.loads(f.read(k))
    n += len(h) - ("__metadata__" in h)
print(n)
`

// inventorySize is one checkpoint of the scaling rows: Llama-shaped, with
// the layer count setting the tensor count (9 per layer + 3).
type inventorySize struct {
	layers, shards int
	small          bool // shrink the widths: only the tensor count matters here
}

var inventorySizes = []inventorySize{
	{layers: 32, shards: 4},                 // 291 tensors, Llama-3.1-8B as published
	{layers: 2048, shards: 16, small: true}, // 18,435
	{layers: 8192, shards: 64, small: true}, // 73,731
}

// inventoryScaling times `phase0 inspect` (whole process: headers, index,
// config, weights gate) against a plain Python header reader on sharded
// checkpoints of 291, 18k and 73k tensors, interleaved run by run, and the
// in-process safetensors.Load rate at each size.
func (b *bench) inventoryScaling() error {
	base, err := os.ReadFile(filepath.Join(b.root, "read", "model", "testdata", "configs", "llama-3.1-8b-tf5.json"))
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "phase0bench-inventory-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "read_headers.py")
	if err := os.WriteFile(script, []byte(pythonHeaderReader), 0o644); err != nil {
		return err
	}
	// The interpreter itself, not what PATH finds first: a version
	// manager's shim (pyenv's is a shell script) would add its own start-up
	// to every Python run and flatter the ratio.
	r, err := runChild(dir, nil, "python3", "-c", "import sys; print(sys.executable)")
	if err != nil {
		return err
	}
	python := strings.TrimSpace(string(r.stdout))
	for i, size := range inventorySizes {
		cfg, err := scaledConfig(base, size)
		if err != nil {
			return err
		}
		model := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(model, 0o755); err != nil {
			return err
		}
		if err := writeCheckpoint(model, cfg, size.shards); err != nil {
			return err
		}
		if err := b.compareInventory(model, python, script, size, i == len(inventorySizes)-1); err != nil {
			return err
		}
	}
	b.note("inventory rows: sparse Llama-shaped checkpoints from model.ExpectedTensors; %s (python3's sys.executable) reads the index and each shard's 8-byte length + json.loads(header)", python)
	return nil
}

func (b *bench) compareInventory(model, pythonExe, script string, size inventorySize, gated bool) error {
	inspect := []string{b.phase0, "inspect", model, "--json"}
	python := []string{pythonExe, script, model}
	wantTensors := 9*size.layers + 3
	// Warm both binaries and the headers in the page cache.
	if _, err := runChild(model, nil, inspect...); err != nil {
		return err
	}
	if r, err := runChild(model, nil, python...); err != nil {
		return err
	} else if got := strings.TrimSpace(string(r.stdout)); got != strconv.Itoa(wantTensors) {
		return fmt.Errorf("the python reader counted %s tensors, want %d", got, wantTensors)
	}
	var tInspect, tPython []time.Duration
	for range scalingRuns {
		r, err := runChild(model, nil, inspect...)
		if err != nil {
			return err
		}
		tInspect = append(tInspect, r.wall)
		if r, err = runChild(model, nil, python...); err != nil {
			return err
		}
		tPython = append(tPython, r.wall)
	}
	var loads []time.Duration
	for range 3 {
		start := time.Now()
		inv, err := safetensors.Load(os.DirFS(model))
		if err != nil {
			return err
		}
		loads = append(loads, time.Since(start))
		if inv.Len() != wantTensors {
			return fmt.Errorf("safetensors.Load found %d tensors, want %d", inv.Len(), wantTensors)
		}
	}
	mi, mp := median(tInspect), median(tPython)
	ratio := mi.Seconds() / mp.Seconds()
	label := fmt.Sprintf("inventory, %d tensors in %d shards", wantTensors, size.shards)
	target, ok := "-", true
	if gated {
		target, ok = fmt.Sprintf("<= %.2fx", scalingRatio), ratio <= scalingRatio
	}
	b.add(label+": phase0 inspect / python header reader (median of 5)", fmt.Sprintf("%.3fx (%s / %s)", ratio, ms(mi), ms(mp)), target, ok)
	rate := float64(wantTensors) / median(loads).Seconds()
	b.add(label+": safetensors.Load in-process", fmt.Sprintf("%.2fM tensors/s", rate/1e6), ">= 1M/s", rate >= loadRateFloor)
	return nil
}

// scaledConfig sets the layer count of the base config.json and, for the
// large sizes, small widths, so the checkpoint's headers are what grows.
func scaledConfig(base []byte, size inventorySize) ([]byte, error) {
	var cfg map[string]any
	if err := json.Unmarshal(base, &cfg); err != nil {
		return nil, err
	}
	cfg["num_hidden_layers"] = size.layers
	if size.small {
		for k, v := range map[string]int{"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 32000} {
			cfg[k] = v
		}
	}
	return json.MarshalIndent(cfg, "", "  ")
}
