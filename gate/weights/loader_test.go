package weights

import (
	"encoding/binary"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/internal/sttest"
	"phase0/read/model"
	"phase0/read/safetensors"
	"phase0/wire"
)

// distinct gives every tensor its own bytes, so a value read from the wrong
// tensor (or the wrong position) differs.
func distinct(ts []sttest.WriteTensor) []sttest.WriteTensor {
	for i := range ts {
		for j := range ts[i].Data {
			ts[i].Data[j] = byte(j*31 + i*7 + 1)
		}
	}
	return ts
}

// loadedAs builds the facts a loader would report: for each field, the
// shape in the (in, out) layout and samples read from the checkpoint tensor
// source(field) — transposed or not as the loader would have done it.
func loadedAs(t *testing.T, cfg *model.Config, inv *safetensors.Inventory, fsys fs.FS, source func(field, hf string) (string, bool)) *wire.LoaderFacts {
	t.Helper()
	facts := &wire.LoaderFacts{Globals: map[string]wire.ArrayFacts{}}
	describe := func(f loaderField, hf string) wire.ArrayFacts {
		name, transposed := source(f.field, hf)
		tn, _ := inv.Tensor(name)
		shape := append([]int64{}, tn.Shape...)
		if transposed {
			shape = []int64{shape[1], shape[0]}
		}
		a := wire.ArrayFacts{Type: "ndarray", Shape: shape, DType: "bfloat16"}
		idx := func(n int64) []int64 { return []int64{0, 1, n / 2, n - 1} }
		var points [][]int64
		if len(shape) == 1 {
			for _, i := range idx(shape[0]) {
				points = append(points, []int64{i})
			}
		} else {
			for _, i := range idx(shape[0]) {
				for _, j := range idx(shape[1]) {
					points = append(points, []int64{i, j})
				}
			}
		}
		for _, p := range points {
			flat := p[0]
			if len(p) == 2 {
				r, c := p[0], p[1]
				if transposed {
					r, c = c, r
				}
				flat = r*tn.Shape[1] + c
			}
			raw, err := safetensors.ReadElements(fsys, tn, []int64{flat})
			if err != nil {
				t.Fatal(err)
			}
			bits := binary.LittleEndian.Uint16(raw[0])
			a.Samples = append(a.Samples, wire.ArraySample{Index: p, Bits: &bits})
		}
		return a
	}
	for _, f := range globalFields() {
		facts.Globals[f.field] = describe(f, f.hf)
	}
	for i := 0; i < cfg.NLayers; i++ {
		layer := map[string]wire.ArrayFacts{}
		for _, f := range layerFields(cfg) {
			layer[f.field] = describe(f, strings.Replace(f.hf, "%d", strconv.Itoa(i), 1))
		}
		facts.Layers = append(facts.Layers, layer)
	}
	return facts
}

func TestCheckLoaderValues(t *testing.T) {
	cfg := tinyConfig(nil)
	inv, fsys := writeCheckpoint(t, cfg, distinct)
	isProjection := func(field string) bool { return strings.HasPrefix(field, "w") }
	right := func(field, hf string) (string, bool) { return hf, isProjection(field) }
	for _, tc := range []struct {
		name   string
		source func(field, hf string) (string, bool)
		want   string
	}{
		{"correct loader", right, ""},
		{"gate and up swapped", func(field, hf string) (string, bool) {
			switch field {
			case "w_gate":
				return strings.Replace(hf, "gate_proj", "up_proj", 1), true
			case "w_up":
				return strings.Replace(hf, "up_proj", "gate_proj", 1), true
			}
			return right(field, hf)
		}, "layer 0 w_gate: value at"},
		{"q and k swapped", func(field, hf string) (string, bool) {
			if field == "wq" {
				// Same shape only when n_kv_heads == n_heads; with GQA the shape check catches it first.
				return strings.Replace(hf, "q_proj", "k_proj", 1), true
			}
			return right(field, hf)
		}, "layer 0 wq: shape"},
		{"missing transpose on a square projection", func(field, hf string) (string, bool) {
			return hf, isProjection(field) && field != "wo"
		}, "layer 0 wo: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := CheckLoader(cfg, loadedAs(t, cfg, inv, fsys, tc.source), inv, fsys)
			text := strings.Join(l.Problems, "\n")
			if tc.want == "" {
				if l.Status != verdict.Pass || l.Sampled == 0 {
					t.Fatalf("status %s, %d sampled:\n%s", l.Status, l.Sampled, text)
				}
				return
			}
			if l.Status != verdict.Fail || !strings.Contains(text, tc.want) {
				t.Errorf("status %s, problems:\n%s\nwant one starting %q", l.Status, text, tc.want)
			}
		})
	}
}
