package orchestrator_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/read/modellist"
	"phase0/run/listrun"
	"phase0/run/orchestrator"
)

// TestTriageMixedList: a list in hf_models.txt format mixing a local folder,
// hub ids inspected remotely from headers only (passing, rejected MoE,
// gated without a token) and a missing folder gives each row its verdict in
// input order and the worst overall; a second run makes no request.
func TestTriageMixedList(t *testing.T) {
	repos, err := testenv.UpstreamRepos()
	if err != nil {
		t.Fatal(err)
	}
	hub := testenv.NewFakeHub(t, repos...)
	var gated, moe, pass string
	for _, m := range testenv.UpstreamModels() {
		switch {
		case m.Gated && gated == "":
			gated = m.ID
		case strings.Contains(m.ID, "Mixtral"):
			moe = m.ID
		case m.ID == "Qwen/Qwen2.5-0.5B-Instruct":
			pass = m.ID
		}
	}
	if gated == "" || moe == "" || pass == "" {
		t.Fatalf("fixture lacks a gated (%q), MoE (%q) or Qwen2.5 (%q) model", gated, moe, pass)
	}
	list := filepath.Join(t.TempDir(), "hf_models.txt")
	local := tiny(t, "qwen3")
	text := "# candidates\n" + local + "\n" + pass + "  # small\n\n" + moe + "\n" + gated + "\n/no/such/model\n"
	if err := os.WriteFile(list, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	entries, err := modellist.Expand([]string{"@" + list})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HF_ENDPOINT": hub.URL(), "HF_HOME": t.TempDir(), "HF_HUB_CACHE": t.TempDir()}
	s := &orchestrator.Settings{MaxSeq: 64, CacheDir: t.TempDir(), Env: func(k string) string { return env[k] }}

	tr := listrun.InspectMany(context.Background(), s, entries, "test", 4)
	want := []struct {
		status verdict.Status
		detail string
	}{
		{verdict.Pass, ""},
		{verdict.Pass, ""},
		{verdict.Rejected, "moe"},
		{verdict.Error, "HF_TOKEN"},
		{verdict.Error, "no such folder"},
	}
	if len(tr.Models) != len(want) {
		t.Fatalf("%d rows, want %d", len(tr.Models), len(want))
	}
	for i, w := range want {
		m := tr.Models[i]
		got := m.Error
		for _, r := range m.Rejections {
			got += " " + r.Code
		}
		if m.Status != w.status || !strings.Contains(got, w.detail) {
			t.Errorf("row %d (%s): %s %q, want %s mentioning %q", i, m.Model, m.Status, got, w.status, w.detail)
		}
	}
	if m := tr.Models[1]; !strings.HasPrefix(m.ModelDir, "hf://") || m.Parameters < 4e8 || len(m.LaterPhases) == 0 {
		t.Errorf("remote row: dir %s, %d parameters, later phases %v", m.ModelDir, m.Parameters, m.LaterPhases)
	}
	if tr.Status != verdict.Error || tr.ExitCode() != 2 {
		t.Errorf("overall %s exit %d, want ERROR exit 2", tr.Status, tr.ExitCode())
	}
	if table := tr.Text(); !strings.Contains(table, "REJECTED (") || !strings.Contains(table, pass) {
		t.Errorf("table:\n%s", table)
	}
	for _, f := range []string{"model.safetensors", "model-00001-of-00002.safetensors"} {
		if st := hub.Served(pass, f); st.Bytes > 100_000 {
			t.Errorf("%s/%s: %d bytes served, more than one header read", pass, f, st.Bytes)
		}
	}

	before := len(hub.Requests())
	again := listrun.InspectMany(context.Background(), s, entries[:3], "test", 4)
	if again.Status != verdict.Rejected {
		t.Errorf("second run: %s", again.Status)
	}
	if n := len(hub.Requests()) - before; n != 0 {
		t.Errorf("second run made %d requests, want 0", n)
	}

	// --scan cannot read tensor bytes of a remote model: a usage-level error.
	s.Scan = true
	r := orchestrator.Inspect(context.Background(), s, pass, "test")
	if r.Status != verdict.Error || !strings.Contains(r.Error, "--scan") {
		t.Errorf("remote --scan: %s %q", r.Status, r.Error)
	}
	// The refusal comes after the model was resolved: the report still
	// names what was resolved (as it did before the stages returned their
	// results).
	if r.ModelID != pass || !strings.HasPrefix(r.ModelDir, "hf://"+pass+"@") || r.Revision == "" {
		t.Errorf("remote --scan report: model_id %q, model_dir %q, revision %q; want %s resolved", r.ModelID, r.ModelDir, r.Revision, pass)
	}
}
