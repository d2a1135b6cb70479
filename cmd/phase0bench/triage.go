package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/read/modellist"
	"phase0/run/listrun"
	"phase0/run/orchestrator"
)

const (
	triageLatency = 50 * time.Millisecond // injected before every answer, hub and CDN
	triageWorkers = 8
	triageWall    = 2 * time.Second
)

// triage times the remote inspection of the 16-model list (real configs,
// real header layouts, tensor bodies that exist nowhere) against a local
// fake hub that waits 50 ms before each answer, as a distant hub would,
// with 8 models in flight. A second run over the filled metadata cache
// must make no request at all.
func (b *bench) triage() error {
	repos, err := testenv.UpstreamRepos()
	if err != nil {
		return err
	}
	hub := testenv.StartFakeHub(repos...)
	defer hub.Close()
	hub.SetLatency(triageLatency)
	cache, err := os.MkdirTemp("", "phase0bench-triage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cache)
	models := testenv.UpstreamModels()
	entries := make([]modellist.Entry, len(models))
	for i, m := range models {
		entries[i] = modellist.Entry{Arg: m.ID, Source: fmt.Sprintf("model %d", i+1)}
	}
	env := map[string]string{"HF_ENDPOINT": hub.URL(), "HF_TOKEN": testenv.HubToken, "HF_HOME": cache, "HF_HUB_CACHE": cache + "/hf-empty"}
	s := &orchestrator.Settings{MaxSeq: 64, CacheDir: cache, Env: func(k string) string { return env[k] }}

	// run is the whole `phase0 inspect MODEL...` path in-process, as the CLI runs it.
	run := func() (time.Duration, int, error) {
		before := len(hub.Requests())
		start := time.Now()
		t := listrun.InspectMany(context.Background(), s, entries, "bench", triageWorkers)
		wall := time.Since(start)
		for i, m := range models {
			if got := verdictOf(t.Models[i].Report); got != m.Want {
				return 0, 0, fmt.Errorf("%s: triaged %s, want %s (%s)", m.ID, got, m.Want, t.Models[i].Error)
			}
		}
		return wall, len(hub.Requests()) - before, nil
	}
	cold, requests, err := run()
	if err != nil {
		return err
	}
	b.add(fmt.Sprintf("triage %d hub models, %s/request", len(models), triageLatency), ms(cold), "< "+triageWall.String(), cold < triageWall)
	b.note("triage: %d requests for %d models on the first run", requests, len(models))
	warm, again, err := run()
	if err != nil {
		return err
	}
	b.add("triage re-run (metadata cache)", fmt.Sprintf("%d requests, %s", again, ms(warm)), "0 requests", again == 0)
	return nil
}

// verdictOf spells a report's outcome as the fixture's Want does.
func verdictOf(r *orchestrator.Report) string {
	switch r.Status {
	case verdict.Pass:
		return "pass"
	case verdict.Rejected:
		codes := make([]string, len(r.Rejections))
		for i, x := range r.Rejections {
			codes[i] = x.Code
		}
		return "reject:" + strings.Join(codes, ",")
	case verdict.Fail:
		if r.Gates.Weights != nil && r.Gates.Weights.Status.Failed() {
			return "fail:weights"
		}
		return "fail:consistency"
	}
	return "error: " + r.Error
}
