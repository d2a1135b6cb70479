package quantfolder

import (
	"path/filepath"
	"testing"

	"phase0/gate/quant"
	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/read/model"
)

// The folder's divisions come from the module, its verify_adapter.py and
// its *_inference.py, and a tile one file hard-codes judges another's
// division: upstream's #1916 shape, an 8B slice width in the 4B inference.
func TestFolderDivisions(t *testing.T) {
	dir := t.TempDir()
	module := "D = 2560\nINTER = 9728\n"
	testenv.WriteFile(t, filepath.Join(dir, "qwen3_4b_q4nx_weights.py"), module)
	testenv.WriteFile(t, filepath.Join(dir, "verify_adapter.py"), "FFN_SLICE = 1536\n")
	testenv.WriteFile(t, filepath.Join(dir, "qwen3_4b_q4nx_inference.py"), "import x\n\nN_SLICES = INTER // FFN_SLICE\n")
	q := &Folder{Dir: dir, Module: "qwen3_4b_q4nx_weights.py", Src: []byte(module)}
	divs, tiles := q.Divisions()
	c := &quant.Constants{Section: verdict.NewSection(), Module: q.Module}
	c.JudgeDivisions(divs, tiles, &model.Config{EmbDim: 2560, HiddenDim: 9728})
	want := "qwen3_4b_q4nx_inference.py:3: INTER // FFN_SLICE: INTER (config.json's hidden_dim) = 9728, which FFN_SLICE = 1536 (hard-coded in verify_adapter.py) does not divide: remainder 512 (6 whole slices cover 9216 of 9728; the rest is never computed)"
	if c.Status != verdict.Fail || len(c.Findings) != 1 || c.Findings[0] != want {
		t.Errorf("%s %q, want FAIL %q", c.Status, c.Findings, want)
	}
}
