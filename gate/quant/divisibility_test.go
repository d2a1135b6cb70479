package quant

import (
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/read/model"
)

// A Qwen3-4B module in the tree's style whose FFN slice width was copied
// from the 8B header: 12288 / 1536 = 8 slices, but 9728 / 1536 leaves 512
// of the FFN uncomputed (upstream's #1916 class). The tile dividing D and
// the head ratio fit and pass.
const tiledModule = `D = 2560  # hidden_size
INTER = 9728  # mlp intermediate
N_Q_HEADS = 32
N_KV_HEADS = 8
Q_PER_KV = N_Q_HEADS // N_KV_HEADS  # 4 (GQA)
TILE_N = 256
FFN_SLICE = 1536  # from the 8B header
N_D_TILES = D // TILE_N
N_FFN_SLICES = INTER // FFN_SLICE  # INTER // NOT_A_CONSTANT in a comment


def ffn(config):
    assert config.hidden_dim % FFN_SLICE == 0
    return D // IMPORTED_TILE
`

func qwen34b() *model.Config {
	return &model.Config{EmbDim: 2560, HiddenDim: 9728, NHeads: 32, NKVHeads: 8, HeadDim: 128, NLayers: 36, VocabSize: 151936}
}

func TestDivisions(t *testing.T) {
	var got []string
	for _, d := range Divisions("m.py", []byte(tiledModule)) {
		got = append(got, d.Expr)
	}
	want := "N_Q_HEADS // N_KV_HEADS|D // TILE_N|INTER // FFN_SLICE|config.hidden_dim % FFN_SLICE|D // IMPORTED_TILE"
	if strings.Join(got, "|") != want {
		t.Errorf("divisions %q, want %q", strings.Join(got, "|"), want)
	}
}

func TestJudgeDivisionsNamesTheRemainder(t *testing.T) {
	c := checkConstants("qwen3_4b_q4nx_weights.py", ModuleConstants([]byte(tiledModule)), qwen34b(), nil)
	if c.Status != verdict.Pass {
		t.Fatalf("the constants themselves equal config.json: %v", c.Findings)
	}
	src := []byte(tiledModule)
	c.JudgeDivisions(Divisions("qwen3_4b_q4nx_weights.py", src), Tiles{ByFile: map[string]map[string]float64{"qwen3_4b_q4nx_weights.py": IntConstants(src)}}, qwen34b())
	if c.Status != verdict.Fail || len(c.Findings) != 2 {
		t.Fatalf("status %s, findings %q: want FAIL for both divisions by FFN_SLICE", c.Status, c.Findings)
	}
	for _, want := range []string{"qwen3_4b_q4nx_weights.py:9: INTER // FFN_SLICE: INTER (config.json's hidden_dim) = 9728, which FFN_SLICE = 1536 does not divide: remainder 512",
		"qwen3_4b_q4nx_weights.py:13: config.hidden_dim % FFN_SLICE"} {
		if !strings.Contains(strings.Join(c.Findings, "\n"), want) {
			t.Errorf("findings lack %q:\n%s", want, strings.Join(c.Findings, "\n"))
		}
	}
	if len(c.Divisions) != 4 {
		t.Errorf("%d divisions judged, want 4 (the imported tile is not judged): %+v", len(c.Divisions), c.Divisions)
	}
	// The 8B's own dimensions: every slice fits.
	ok := checkConstants("m.py", nil, qwen34b(), nil)
	eight := &model.Config{EmbDim: 4096, HiddenDim: 12288, NHeads: 32, NKVHeads: 8, HeadDim: 128}
	ok.JudgeDivisions(Divisions("m.py", src), Tiles{ByFile: map[string]map[string]float64{"m.py": IntConstants(src)}}, eight)
	if ok.Status != verdict.Pass || len(ok.Divisions) != 4 {
		t.Errorf("Qwen3-8B's dims: %s %q, want PASS with 4 judged", ok.Status, ok.Findings)
	}
}

// A tile the module does not define is looked up in the folder's other files.
func TestJudgeDivisionsTileFromAnotherFile(t *testing.T) {
	c := checkConstants("m.py", nil, qwen34b(), nil)
	tiles := Tiles{ByFile: map[string]map[string]float64{"m.py": {}, "verify_adapter.py": {"FFN_SLICE": 1536}}, Order: []string{"m.py", "verify_adapter.py"}}
	c.JudgeDivisions([]Division{{File: "m_inference.py", Line: 7, Expr: "INTER // FFN_SLICE", Dim: "INTER", Tile: "FFN_SLICE"}}, tiles, qwen34b())
	if c.Status != verdict.Fail || !strings.Contains(c.Findings[0], "m_inference.py:7: INTER // FFN_SLICE") || !strings.Contains(c.Findings[0], "(hard-coded in verify_adapter.py)") {
		t.Errorf("%s %q", c.Status, c.Findings)
	}
}
