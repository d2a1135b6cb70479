package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/gate/quant"
	"phase0/wire"
)

// TestQuantE2EBesideItsTwin: a quantized key's report.md shows quantized
// gate 2's bundle beside its twin (the KL tails, top-1, Δp, perplexity),
// the paired rules, the per-layer cosines with the layer where they part
// and the plot; report.json carries the same figures. The facts are the
// worker's for the fixtures' bundle with mis-ordered nibbles.
func TestQuantE2EBesideItsTwin(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "gate", "quant", "testdata", "twin", "nibbles.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f wire.QuantE2EFacts
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	r := fullReport()
	r.Gates.QuantE2E = quant.JudgeE2E(quant.Q4NX(), &f, 2)
	dir := filepath.Join(t.TempDir(), "rec")
	if err := Write(r, dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Quantized end to end: Q4NX against its twin",
		"| | KL mean | median | p90 | p99 | max | top-1 agrees | Δp RMS | Δp max | perplexity ratio |",
		"| bundle | 0.1035 |", "| twin | 0.00169 |",
		"| KL | 0.1018 |", "**worse**",
		"(they first part at layer 0)", "| 0 | 0.1082 | 0.9935 | ← parts |",
		"](hidden_cosine.png)",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	png, err := os.ReadFile(filepath.Join(dir, "hidden_cosine.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("hidden_cosine.png is not a PNG (%v, %d bytes)", err, len(png))
	}
	js, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js, &back); err != nil || back.Gates.QuantE2E == nil || back.Gates.QuantE2E.Twin == nil ||
		back.Gates.QuantE2E.Twin.Twin.KL.P99 == 0 || back.Gates.QuantE2E.Twin.PartsAt == nil {
		t.Errorf("report.json lacks the twin's figures (%v): %s", err, js)
	}
}
