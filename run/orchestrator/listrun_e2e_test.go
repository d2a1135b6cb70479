package orchestrator_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/output/report"
	"phase0/read/modellist"
	"phase0/run/listrun"
	"phase0/run/orchestrator"
)

// awqID and vlaID are an AWQ repack and a VLA policy from mlir-air's
// hf_models.txt: not Phase 0 models.
const (
	awqID = "amd/Llama-3.2-1B-Instruct-awq-uint4-asym-g128-bf16-lmhead"
	vlaID = "lerobot/smolvla_base"
)

// The package's test helpers (export_test.go), for these tests of the
// list runs, which import listrun (and so cannot be in package orchestrator).
var (
	isolated     = orchestrator.Isolated
	settingsFor  = orchestrator.SettingsFor
	stageNames   = orchestrator.StageNames
	tiny         = orchestrator.Tiny
	upstreamTree = orchestrator.UpstreamTree
)

// reason is why a row did not pass, in one line (report.Reason).
func reason(r *report.Report) string {
	why, _ := report.Reason(r)
	return why.Message
}

// seedHFCache writes a snapshot of id into an HF hub cache the way
// huggingface_hub lays it out (refs/main, blobs, snapshot links), as the
// nightly's download workflow leaves it.
func seedHFCache(t *testing.T, cache, id string, files map[string][]byte) {
	t.Helper()
	repo := filepath.Join(cache, "models--"+strings.ReplaceAll(id, "/", "--"))
	sum := sha256.Sum256([]byte(id))
	sha := hex.EncodeToString(sum[:20])
	testenv.WriteFile(t, filepath.Join(repo, "refs", "main"), sha)
	for name, data := range files {
		b := sha256.Sum256(data)
		blob := filepath.Join(repo, "blobs", hex.EncodeToString(b[:]))
		testenv.WriteFile(t, blob, string(data))
		link := filepath.Join(repo, "snapshots", sha, name)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(filepath.Dir(link), blob)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(rel, link); err != nil {
			t.Fatal(err)
		}
	}
}

// listFile writes a list in hf_models.txt's format and expands it as the CLI does.
func listFile(t *testing.T, lines ...string) []modellist.Entry {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hf_models.txt")
	testenv.WriteFile(t, path, "# models the nightly loads\n"+strings.Join(lines, "\n")+"\n")
	entries, err := modellist.Expand([]string{"@" + path})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// visionFolder is a local checkpoint folder whose config.json is a vision
// model's (SmolVLM2, which hf_models.txt lists beside the VLA policy).
func visionFolder(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "smolvlm2")
	testenv.WriteFile(t, filepath.Join(dir, "config.json"), `{"architectures": ["SmolVLMForConditionalGeneration"], "model_type": "smolvlm",
 "image_token_id": 49190, "scale_factor": 4, "tie_word_embeddings": false,
 "text_config": {"architectures": ["VLlama3ForCausalLM"], "hidden_size": 960, "num_hidden_layers": 32, "vocab_size": 49280},
 "vision_config": {"hidden_size": 768, "model_type": "smolvlm_vision", "num_hidden_layers": 12, "patch_size": 16}}`)
	return dir
}

// TestRunManyList is `phase0 run @hf_models.txt --llms-dir T` as mlir-air's
// nightly calls it: offline, with a pre-seeded HF cache. Two tiny models
// pass; an AWQ packaging and a VLA policy in the cache and a vision model
// are REJECTED with their reason; an id the offline cache lacks is an ERROR naming the
// offline switch; every row runs, in list order, one after the other, and
// the exit code is the worst row's. The same list again reuses both PASS
// verdicts without starting Python.
func TestRunManyList(t *testing.T) {
	llms := upstreamTree(t)
	s := isolated(settingsFor(t, llms)) // the HF_* variables set here reach only a new interpreter
	s.ReferenceSteps = 4                // the REFERENCE column, cheaply
	hfHome := t.TempDir()
	t.Setenv("HF_HOME", hfHome)
	t.Setenv("HF_HUB_CACHE", filepath.Join(hfHome, "hub"))
	t.Setenv("HF_HUB_OFFLINE", "1")
	var awqConfig string
	for _, m := range testenv.UpstreamModels() {
		if m.ID == awqID {
			awqConfig = m.Config
		}
	}
	if awqConfig == "" {
		t.Fatalf("testenv.UpstreamModels lacks %s", awqID)
	}
	seedHFCache(t, filepath.Join(hfHome, "hub"), awqID, map[string][]byte{
		"config.json": []byte(awqConfig), "model.safetensors": []byte("never read: the config refuses the packaging"),
		"tokenizer.json": []byte(`{"model": {"type": "BPE"}}`),
	})
	// The VLA policy as the download workflow caches it: a lerobot config
	// (no architectures) and weights, no tokenizer, so the snapshot is
	// incomplete, yet its config alone decides.
	seedHFCache(t, filepath.Join(hfHome, "hub"), vlaID, map[string][]byte{
		"config.json":       []byte(`{"type": "smolvla", "n_obs_steps": 1, "chunk_size": 50, "vlm_model_name": "HuggingFaceTB/SmolVLM2-500M-Video-Instruct"}`),
		"model.safetensors": []byte("never read"),
	})
	qwen3, llama := tiny(t, "qwen3"), tiny(t, "llama-llama3")
	entries := listFile(t, qwen3, awqID+"  # int4 AWQ source", "", "Qwen/Qwen3-0.6B", vlaID, visionFolder(t), llama)
	want := []struct {
		status verdict.Status
		folder string
		why    string
	}{
		{verdict.Pass, "qwen3", ""},
		{verdict.Rejected, "", `[quantized] config.json has quantization_config (quant_method "awq")`},
		{verdict.Error, "", "HF_HUB_OFFLINE"},
		{verdict.Rejected, "", "[unsupported_architecture] config.json names no architectures"},
		{verdict.Rejected, "", "[unsupported_architecture] architecture SmolVLMForConditionalGeneration is not supported"},
		{verdict.Pass, "llama_llama3", ""},
	}

	var progress strings.Builder
	s.Progress = &progress
	check := func(t *testing.T, b *listrun.Batch, reused bool) {
		t.Helper()
		if len(b.Models) != len(want) {
			t.Fatalf("%d rows, want %d:\n%s", len(b.Models), len(want), b.Text())
		}
		for i, w := range want {
			m := b.Models[i]
			folder := ""
			if m.Workspace != nil {
				folder = m.Workspace.Name
			}
			if m.Model != entries[i].Arg || m.ListedAt != entries[i].Source || m.Status != w.status || folder != w.folder || !strings.Contains(reason(m.Report), w.why) {
				t.Errorf("row %d: %s (%s) %s in %q, %q; want %s (%s) %s in %q, %q", i, m.Model, m.ListedAt, m.Status, folder, reason(m.Report),
					entries[i].Arg, entries[i].Source, w.status, w.folder, w.why)
			}
			if w.status == verdict.Pass && (m.ReusedFrom != nil) != reused {
				t.Errorf("row %d: reused_from %+v, want reused %v; stages %v", i, m.ReusedFrom, reused, stageNames(m.Report))
			}
			if w.status == verdict.Pass && reused && !slices.Equal(stageNames(m.Report), []string{"llms_dir", "reuse"}) {
				t.Errorf("row %d: a reused verdict ran stages %v", i, stageNames(m.Report))
			}
			if w.status == verdict.Rejected && m.Workspace != nil {
				t.Errorf("row %d: a rejected model got a workspace %s", i, m.Workspace.Dir)
			}
		}
		// One after the other, so the rows' seconds add up to at most the
		// list's (each row is timed from its real start, not a whole second).
		var sum float64
		for _, m := range b.Models {
			sum += m.Seconds
		}
		if sum > b.Seconds {
			t.Errorf("rows took %.3fs in all, more than the list's %.3fs", sum, b.Seconds)
		}
		if b.Status != verdict.Error || b.ExitCode() != 2 || b.Interrupted {
			t.Errorf("overall %s, exit %d, interrupted %v; want ERROR, exit 2", b.Status, b.ExitCode(), b.Interrupted)
		}
		// Sequential: each model's result line comes before the next model starts.
		at := 0
		for i, e := range entries {
			start := strings.Index(progress.String()[at:], fmt.Sprintf("[%d/%d] %s (", i+1, len(entries), e.Arg))
			end := strings.Index(progress.String()[at:], fmt.Sprintf("[%d/%d] %s: %s in ", i+1, len(entries), e.Arg, want[i].status))
			if start < 0 || end < start {
				t.Fatalf("progress lacks row %d's start and result in order:\n%s", i+1, progress.String()[at:])
			}
			at += end
		}
		progress.Reset()
	}

	first, err := listrun.RunMany(context.Background(), s, entries, "test")
	if err != nil {
		t.Fatal(err)
	}
	check(t, first, false)
	for _, dir := range []string{"qwen3", "llama_llama3"} {
		if _, err := os.Stat(filepath.Join(llms, dir, "reference", "reference.json")); err != nil {
			t.Errorf("%s: no recorded reference: %v", dir, err)
		}
	}
	entriesInTree, _ := os.ReadDir(llms)
	for _, e := range entriesInTree {
		if name := strings.ToLower(e.Name()); strings.Contains(name, "awq") || strings.Contains(name, "smolvla_base") || strings.Contains(name, "smolvlm2") || strings.Contains(name, "qwen3_0_6b") {
			t.Errorf("the tree gained %s for a model that was rejected or not found", e.Name())
		}
	}
	table := first.Text()
	for _, s := range []string{"MODEL", "FOLDER", "MODE", "WTS", "HF", "SEC", " gen ", " rec ", "6 model(s)", "2 PASS, 3 REJECTED, 1 ERROR"} {
		if !strings.Contains(table, s) {
			t.Errorf("table lacks %q:\n%s", s, table)
		}
	}

	again, err := listrun.RunMany(context.Background(), s, entries, "test")
	if err != nil {
		t.Fatal(err)
	}
	check(t, again, true)
	if table := again.Text(); strings.Count(table, "gen reused") != 2 {
		t.Errorf("second table does not say reused for both PASS rows:\n%s", table)
	}
	var decoded struct {
		Status verdict.Status `json:"status"`
		Models []struct {
			Model      string          `json:"model"`
			ListedAt   string          `json:"listed_at"`
			Status     verdict.Status  `json:"status"`
			ReusedFrom json.RawMessage `json:"reused_from"`
			Workspace  *struct {
				Name string `json:"name"`
				Mode string `json:"mode"`
			} `json:"workspace"`
		} `json:"models"`
	}
	raw, err := json.Marshal(again)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatal(err)
	}
	if decoded.Status != verdict.Error || len(decoded.Models) != len(entries) || decoded.Models[5].ListedAt != entries[5].Source ||
		decoded.Models[0].Workspace == nil || decoded.Models[0].Workspace.Mode != report.ModeGenerated || len(decoded.Models[0].ReusedFrom) == 0 {
		t.Errorf("JSON {status, models[]}: %s", raw)
	}
}

// cancelOnWrite cancels a context when a progress line contains mark: an
// interrupt arriving between two models of a list.
type cancelOnWrite struct {
	mu     sync.Mutex
	mark   string
	cancel context.CancelFunc
	out    strings.Builder
}

func (c *cancelOnWrite) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if strings.Contains(string(p), c.mark) {
		c.cancel()
	}
	return c.out.Write(p)
}

// TestRunManyInterrupted: an interrupt stops the list. The model under way
// reports interrupted, the rest are listed as not run, and the exit is 130.
func TestRunManyInterrupted(t *testing.T) {
	s := settingsFor(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	vision := visionFolder(t)
	entries := []modellist.Entry{{Arg: vision, Source: "argument 1"}, {Arg: tiny(t, "qwen3"), Source: "argument 2"}, {Arg: vision, Source: "argument 3"}}
	w := &cancelOnWrite{mark: "[2/3]", cancel: cancel}
	s.Progress = w
	b, err := listrun.RunMany(ctx, s, entries, "test")
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, m := range b.Models {
		got = append(got, fmt.Sprintf("%s interrupted=%v", m.Status, m.Interrupted))
	}
	wantRows := []string{"REJECTED interrupted=false", "ERROR interrupted=true", "ERROR interrupted=true"}
	if !slices.Equal(got, wantRows) || !b.Interrupted || b.ExitCode() != verdict.Interrupted {
		t.Fatalf("rows %v, interrupted %v, exit %d; want %v, exit 130:\n%s", got, b.Interrupted, b.ExitCode(), wantRows, b.Text())
	}
	if !strings.Contains(b.Models[2].Error, "not run") || strings.Contains(w.out.String(), "[3/3]") {
		t.Errorf("the third model ran or does not say it was not run: %q\n%s", b.Models[2].Error, w.out.String())
	}
	if _, err := os.Stat(filepath.Join(s.OutDir, "qwen3")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the interrupted model left a workspace: %v", err)
	}
	if !strings.Contains(b.Text(), "ERROR (interrupted)") {
		t.Errorf("table does not say interrupted:\n%s", b.Text())
	}
}
