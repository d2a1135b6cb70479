package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/output/report"
)

const (
	hubRepoID = "tiny-org/tiny-qwen3"
	mainSHA   = "0123456789abcdef0123456789abcdef01234567"
	v1SHA     = "89abcdef0123456789abcdef0123456789abcdef"
)

// hubRepo is the tiny qwen3 checkpoint as a Hub repository with two commits,
// plus files phase0 must never fetch: pickled weights next to the
// safetensors, and a README.
func hubRepo(t *testing.T) *testenv.FakeRepo {
	t.Helper()
	repo := testenv.RepoFromDir(t, hubRepoID, tiny(t, "qwen3"), map[string]string{"main": mainSHA, "v1": v1SHA})
	repo.Files["pytorch_model.bin"] = []byte("a pickle phase0 must not download")
	repo.Files["README.md"] = []byte("# tiny qwen3\n")
	return repo
}

// hubEnv points huggingface_hub (in this process and in the worker) at hub,
// with an empty cache, no stored token and HF_HUB_OFFLINE unset.
func hubEnv(t *testing.T, hub *testenv.FakeHub) (cache string) {
	t.Helper()
	cache = t.TempDir()
	for k, v := range map[string]string{
		"HF_ENDPOINT":                 hub.URL(),
		"HF_HUB_CACHE":                cache,
		"HF_HOME":                     t.TempDir(),
		"HF_TOKEN":                    "",
		"HUGGING_FACE_HUB_TOKEN":      "",
		"HF_HUB_OFFLINE":              "",
		"TRANSFORMERS_OFFLINE":        "",
		"HF_HUB_DISABLE_TELEMETRY":    "1",
		"HF_HUB_DISABLE_XET":          "1",
		"HF_HUB_DISABLE_UPDATE_CHECK": "1",
	} {
		t.Setenv(k, v)
	}
	return cache
}

func snapshotDir(cache, sha string) string {
	return filepath.Join(cache, "models--tiny-org--tiny-qwen3", "snapshots", sha)
}

// fetched lists the repository files the hub served through /resolve/.
func fetched(hub *testenv.FakeHub) []string {
	var names []string
	for _, req := range hub.Requests() {
		if _, file, ok := strings.Cut(req, "/resolve/"); ok {
			_, name, _ := strings.Cut(file, "/")
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func snapshotFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestHubDownloadThenOffline: an empty cache with HF_HUB_OFFLINE set is an
// error; online, the worker downloads the safetensors snapshot; afterwards
// the cache answers natively, offline or not, without a single request.
func TestHubDownloadThenOffline(t *testing.T) {
	hub := testenv.NewFakeHub(t, hubRepo(t))
	cache := hubEnv(t, hub)
	s := isolated(settingsFor(t, ""))
	ctx := context.Background()

	t.Setenv("HF_HUB_OFFLINE", "1")
	r := inspectDownloading(ctx, s, hubRepoID, "test")
	if r.Status != verdict.Error || r.ErrorKind != report.ErrorHub || !strings.Contains(r.Error, "HF_HUB_OFFLINE") || !strings.Contains(r.Error, "not in the cache") {
		t.Fatalf("offline with an empty cache: status %s, kind %q, error %q", r.Status, r.ErrorKind, r.Error)
	}
	if n := len(hub.Requests()); n != 0 {
		t.Fatalf("offline resolution sent %d requests to the hub: %q", n, hub.Requests())
	}

	t.Setenv("HF_HUB_OFFLINE", "")
	r = inspectDownloading(ctx, s, hubRepoID, "test")
	mustPass(t, r)
	want := []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}
	if r.Revision != mainSHA || r.ModelDir != snapshotDir(cache, mainSHA) || r.ModelID != hubRepoID || r.Family != "qwen3" {
		t.Errorf("downloaded: id %s, family %s, revision %s at %s; want %s at %s", r.ModelID, r.Family, r.Revision, r.ModelDir, mainSHA, snapshotDir(cache, mainSHA))
	}
	if got := fetched(hub); !slices.Equal(got, want) {
		t.Errorf("files fetched from the hub = %q, want %q (never pickles or READMEs)", got, want)
	}
	if got := snapshotFiles(t, r.ModelDir); !slices.Equal(got, want) {
		t.Errorf("snapshot holds %q, want %q", got, want)
	}
	requests := len(hub.Requests())

	for _, tt := range []struct{ offline, arg string }{
		{"1", hubRepoID},
		{"", hubRepoID},
		{"1", hubRepoID + "@main"},
		{"true", hubRepoID + "@" + mainSHA},
	} {
		t.Setenv("HF_HUB_OFFLINE", tt.offline)
		r := inspectDownloading(ctx, s, tt.arg, "test")
		mustPass(t, r)
		if r.Revision != mainSHA || r.ModelDir != snapshotDir(cache, mainSHA) {
			t.Errorf("%s (HF_HUB_OFFLINE=%q) from the cache: revision %s at %s", tt.arg, tt.offline, r.Revision, r.ModelDir)
		}
		if got := hub.Requests(); len(got) != requests {
			t.Errorf("%s (HF_HUB_OFFLINE=%q) was cached but sent requests %q", tt.arg, tt.offline, got[requests:])
		}
	}
}

// TestHubPinnedRevision: org/name@<sha> downloads and then resolves exactly
// that commit, not whatever main points at.
func TestHubPinnedRevision(t *testing.T) {
	hub := testenv.NewFakeHub(t, hubRepo(t))
	cache := hubEnv(t, hub)
	s := isolated(settingsFor(t, ""))
	arg := hubRepoID + "@" + v1SHA

	r := inspectDownloading(context.Background(), s, arg, "test")
	mustPass(t, r)
	if r.Revision != v1SHA || r.ModelDir != snapshotDir(cache, v1SHA) {
		t.Fatalf("%s: revision %s at %s, want %s", arg, r.Revision, r.ModelDir, snapshotDir(cache, v1SHA))
	}
	if _, err := os.Stat(snapshotDir(cache, mainSHA)); err == nil {
		t.Errorf("pinning %s also fetched main's snapshot", v1SHA)
	}

	requests := len(hub.Requests())
	t.Setenv("HF_HUB_OFFLINE", "1")
	r = inspectDownloading(context.Background(), s, arg, "test")
	mustPass(t, r)
	if r.Revision != v1SHA || r.ModelDir != snapshotDir(cache, v1SHA) || len(hub.Requests()) != requests {
		t.Errorf("%s offline: revision %s at %s, %d new requests", arg, r.Revision, r.ModelDir, len(hub.Requests())-requests)
	}
	r = inspectDownloading(context.Background(), s, hubRepoID, "test")
	if r.Status != verdict.Error || !strings.Contains(r.Error, "not in the cache") {
		t.Errorf("main was never downloaded, yet offline it resolved: status %s, error %q", r.Status, r.Error)
	}
}

// TestHubErrors: each way a hub id can fail is an error (exit 2) whose
// message says what to do.
func TestHubErrors(t *testing.T) {
	const granted = "hf_granted"
	gated := testenv.RepoFromDir(t, "tiny-org/gated", tiny(t, "qwen3"), map[string]string{"main": mainSHA})
	gated.Gated, gated.Tokens = true, []string{granted}
	pickled := testenv.RepoFromDir(t, "tiny-org/pickled", tiny(t, "qwen3"), map[string]string{"main": mainSHA})
	delete(pickled.Files, "model.safetensors")
	pickled.Files["pytorch_model.bin"] = []byte("a pickle phase0 must not download")
	hub := testenv.NewFakeHub(t, hubRepo(t), gated, pickled)

	tests := []struct {
		name, arg, token string
		want             []string // substrings of the error; none for PASS
	}{
		// Anonymous, the Hub answers 401 RepoNotFound (404 with a token): not to be taken for a gated repo.
		{"unknown repo", "tiny-org/no-such-model", "", []string{"tiny-org/no-such-model was not found", "check the id", "(not_found_404)"}},
		{"gated without a token", "tiny-org/gated", "", []string{"tiny-org/gated is gated", "request access", "hf auth login", "HF_TOKEN", "(gated_401)"}},
		{"gated, token not granted", "tiny-org/gated", "hf_someone", []string{"is gated", "hf auth login", "HF_TOKEN", "(gated_401)"}},
		{"gated, token granted", "tiny-org/gated", granted, nil},
		{"bad revision", hubRepoID + "@nosuchbranch", "", []string{"has no revision 'nosuchbranch'", "branch, tag or commit", "(bad_revision)"}},
		{"pickles only", "tiny-org/pickled", "", []string{"no safetensors weights", "pytorch_model.bin", "never loads", "(no_safetensors)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hubEnv(t, hub)
			t.Setenv("HF_TOKEN", tt.token)
			before := len(hub.Requests())
			r := inspectDownloading(context.Background(), isolated(settingsFor(t, "")), tt.arg, "test")
			if tt.want == nil {
				mustPass(t, r)
				return
			}
			t.Logf("%s: %s", tt.arg, r.Error)
			if r.Status != verdict.Error || ExitCode(r) != 2 || r.ErrorKind != report.ErrorHub {
				t.Fatalf("status %s, kind %q, error %q; want ERROR, hub", r.Status, r.ErrorKind, r.Error)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.Error, w) {
					t.Errorf("error %q does not say %q", r.Error, w)
				}
			}
			for _, req := range hub.Requests()[before:] {
				if strings.HasSuffix(req, ".bin") {
					t.Errorf("pickled weights were requested: %s", req)
				}
			}
		})
	}
}

// inspectDownloading is inspect with the download path: these tests exercise
// resolution through huggingface_hub in the worker, which baseline and run
// use; the inspect command itself reads uncached models from headers only.
func inspectDownloading(ctx context.Context, s *Settings, arg, version string) *report.Report {
	return runChain(ctx, s, "inspect", arg, version, withoutSkippedScan(inspectStages, s))
}
