package quantfolder

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/gate/quant"
	"phase0/gate/verdict"
	"phase0/read/llmstree"
	"phase0/read/model"
)

// TestConstantsNameTheirFile: a constant edited in verify_adapter.py is
// reported against verify_adapter.py, one in the weights module against
// the module.
func TestConstantsNameTheirFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, llmstree.AdapterFile), []byte("_N_LAYERS = 15  # edited\nMODEL_CHOICES = {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q := &Folder{Dir: dir, Src: []byte("D = 2048\nINTER = 4096\n"), Use: llmstree.Use{Module: "llama32_1b_q4nx_weights.py"}}
	consts, files := q.Constants()
	ref := &model.Config{NLayers: 16, EmbDim: 2048, HiddenDim: 8192}
	c := quant.CheckConstantsFrom(q.Use.Module, consts, files, ref, nil)
	want := []string{
		"llama32_1b_q4nx_weights.py: INTER = 4096, but the reference's config.json gives hidden_dim = 8192",
		"verify_adapter.py: _N_LAYERS = 15, but the reference's config.json gives n_layers = 16",
	}
	if c.Status != verdict.Fail || strings.Join(c.Findings, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s\n%s\nwant\n%s", c.Status, strings.Join(c.Findings, "\n"), strings.Join(want, "\n"))
	}
}
