package hfcache

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"phase0/internal/testenv"
)

// runPython runs a script with a clean Hub environment: no token, no user
// cache, no telemetry, the endpoint pointed at our server.
func runPython(t *testing.T, py, endpoint, cache, script string, args ...string) []byte {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(py, append([]string{"-c", script}, args...)...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"HF_HOME=" + filepath.Join(home, "hf"),
		"HF_HUB_CACHE=" + cache,
		"HF_ENDPOINT=" + endpoint,
		"HF_HUB_DISABLE_TELEMETRY=1",
		"HF_HUB_DISABLE_UPDATE_CHECK=1",
		"HF_HUB_DISABLE_PROGRESS_BARS=1",
		"HF_HUB_DISABLE_XET=1",
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python failed: %v\nstderr:\n%s", err, stderr.String())
	}
	return out
}

const downloadScript = `
import json, sys
from huggingface_hub import snapshot_download
from safetensors.numpy import load_file
calls = json.loads(sys.argv[1])
results = []
for c in calls:
    path = snapshot_download(c["repo"], revision=c.get("revision"), allow_patterns=c.get("allow"))
    tensors = {}
    for name in sorted(c.get("check_safetensors", [])):
        for k, v in load_file(f"{path}/{name}").items():
            tensors[k] = v.tolist()
    results.append({"path": path, "tensors": tensors})
print(json.dumps(results))
`

// TestResolveAfterRealSnapshotDownload lets huggingface_hub itself populate a
// cache from a local Hub, then resolves it offline.
func TestResolveAfterRealSnapshotDownload(t *testing.T) {
	py := testenv.Python(t)
	const mainSHA, devSHA = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	shard1 := testenv.TinySafetensors(t, map[string][]float32{"model.embed_tokens.weight": {1, 2, 3, 4}})
	shard2 := testenv.TinySafetensors(t, map[string][]float32{"model.norm.weight": {0.5, -1}, "lm_head.weight": {7}})
	repo := &testenv.FakeRepo{
		ID:   "tiny-org/tiny-llama",
		Refs: map[string]string{"main": mainSHA, "dev": devSHA},
		Files: map[string][]byte{
			"config.json": []byte(`{"architectures": ["LlamaForCausalLM"], "model_type": "llama"}`),
			"model.safetensors.index.json": indexJSON(map[string]string{
				"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
				"model.norm.weight":         "model-00002-of-00002.safetensors",
				"lm_head.weight":            "model-00002-of-00002.safetensors",
			}),
			"model-00001-of-00002.safetensors": shard1,
			"model-00002-of-00002.safetensors": shard2,
			"tokenizer.json":                   []byte(`{"version": "1.0"}`),
			"tokenizer_config.json":            []byte(`{"model_max_length": 8}`),
			"README.md":                        []byte("# tiny\n"),
		},
	}
	hub := testenv.NewFakeHub(t, repo)
	cache := t.TempDir()

	calls := []map[string]any{
		{"repo": repo.ID, "check_safetensors": []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}},
		{"repo": repo.ID, "revision": "dev", "allow": []string{"*.json", "model-00001-*"}},
	}
	arg, err := json.Marshal(calls)
	if err != nil {
		t.Fatal(err)
	}
	var results []struct {
		Path    string               `json:"path"`
		Tensors map[string][]float64 `json:"tensors"`
	}
	out := runPython(t, py, hub.URL(), cache, downloadScript, string(arg))
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(calls) {
		t.Fatalf("python output %q: %v", out, err)
	}
	wantTensors := map[string][]float64{"model.embed_tokens.weight": {1, 2, 3, 4}, "model.norm.weight": {0.5, -1}, "lm_head.weight": {7}}
	for name, want := range wantTensors {
		if got := results[0].Tensors[name]; !slices.Equal(got, want) {
			t.Errorf("safetensors read back %s = %v, want %v", name, got, want)
		}
	}

	tests := []struct {
		id          string
		pythonPath  string
		wantSHA     string
		wantMissing []string
		wantFiles   []string
	}{
		{id: repo.ID, pythonPath: results[0].Path, wantSHA: mainSHA, wantFiles: repo.FileNames()},
		{id: repo.ID + "@" + mainSHA, pythonPath: results[0].Path, wantSHA: mainSHA, wantFiles: repo.FileNames()},
		{
			id: repo.ID + "@dev", pythonPath: results[1].Path, wantSHA: devSHA,
			wantMissing: []string{"model-00002-of-00002.safetensors"},
			wantFiles:   []string{"config.json", "model-00001-of-00002.safetensors", "model.safetensors.index.json", "tokenizer.json", "tokenizer_config.json"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			ref, err := ParseID(tt.id)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Resolve(cache, ref)
			if err != nil {
				t.Fatalf("Resolve(%s): %v", tt.id, err)
			}
			if got.Dir != tt.pythonPath || got.Revision != tt.wantSHA {
				t.Errorf("Resolve(%s) = %s at %s, huggingface_hub returned %s at %s", tt.id, got.Revision, got.Dir, tt.pythonPath, tt.wantSHA)
			}
			if !slices.Equal(got.Missing, tt.wantMissing) {
				t.Errorf("Missing = %q, want %q", got.Missing, tt.wantMissing)
			}
			entries, err := os.ReadDir(got.Dir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
				link, err := os.Readlink(filepath.Join(got.Dir, e.Name()))
				if err != nil || !strings.HasPrefix(link, "../../blobs/") {
					t.Errorf("%s: want a relative symlink into ../../blobs/, got %q (%v)", e.Name(), link, err)
				}
				data, err := os.ReadFile(filepath.Join(got.Dir, e.Name()))
				if err != nil || !bytes.Equal(data, repo.Files[e.Name()]) {
					t.Errorf("%s: content differs from what the hub served (%v)", e.Name(), err)
				}
			}
			if !slices.Equal(names, tt.wantFiles) {
				t.Errorf("snapshot files = %q, want %q", names, tt.wantFiles)
			}
		})
	}
}

// TestCacheDirMatchesHuggingFaceHub compares CacheDir with the value
// huggingface_hub's constants module computes for the same environment.
func TestCacheDirMatchesHuggingFaceHub(t *testing.T) {
	py := testenv.Python(t)
	envs := []map[string]string{
		{"HOME": "/home/u"},
		{"HOME": "/home/u", "XDG_CACHE_HOME": "/xdg"},
		{"HOME": "/home/u", "XDG_CACHE_HOME": "/xdg", "HF_HOME": "/hf"},
		{"HOME": "/home/u", "HF_HOME": "/hf", "HUGGINGFACE_HUB_CACHE": "/legacy"},
		{"HOME": "/home/u", "HF_HOME": "/hf", "HUGGINGFACE_HUB_CACHE": "/legacy", "HF_HUB_CACHE": "/hub"},
		{"HOME": "/home/u", "HF_HOME": "~/hf"},
		{"HOME": "/home/u", "HF_HUB_CACHE": "~/c"},
		{"HOME": "/home/u", "HF_HUB_CACHE": "~root/c"},
		{"HOME": "/home/u", "SCRATCH": "/s", "HF_HOME": "$SCRATCH/hf"},
		{"HOME": "/home/u", "SCRATCH": "/s", "HF_HUB_CACHE": "${SCRATCH}/hub/$NOPE"},
		{"HOME": "/home/u", "FAST": "/f", "XDG_CACHE_HOME": "$FAST/c"},
	}
	const script = `
import importlib, json, os, sys
from huggingface_hub import constants
out = []
for env in json.loads(sys.argv[1]):
    os.environ.clear()
    os.environ.update(env)
    out.append(importlib.reload(constants).HF_HUB_CACHE)
print(json.dumps(out))
`
	arg, err := json.Marshal(envs)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	if err := json.Unmarshal(runPython(t, py, "http://unused.invalid", t.TempDir(), script, string(arg)), &want); err != nil {
		t.Fatal(err)
	}
	for i, env := range envs {
		if got := CacheDir(func(k string) string { return env[k] }); got != want[i] {
			t.Errorf("CacheDir(%v) = %q, huggingface_hub says %q", env, got, want[i])
		}
	}
}
