package hubmeta

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"phase0/gate/config"
	"phase0/gate/verdict"
	"phase0/gate/weights"
	"phase0/internal/testenv"
	"phase0/read/hfcache"
	"phase0/read/model"
	"phase0/read/safetensors"
)

func newClient(t *testing.T, hub *testenv.FakeHub, cache string, mod func(*Options)) *Client {
	t.Helper()
	opt := Options{Endpoint: hub.URL(), CacheDir: cache, BackoffBase: time.Millisecond}
	if mod != nil {
		mod(&opt)
	}
	c, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ref(t *testing.T, s string) hfcache.Ref {
	t.Helper()
	r, err := hfcache.ParseID(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// triage is what phase0 inspect decides for one hub model, computed the way
// the CLI will: architecture gate on config.json, then gate 1 on the
// inventory, both by the packages that judge local folders.
func triage(ctx context.Context, c *Client, id string) (string, error) {
	r, err := hfcache.ParseID(id)
	if err != nil {
		return "", err
	}
	m, err := c.Resolve(ctx, r)
	if err != nil {
		return "", err
	}
	raw, err := model.ParseRaw(m.Config)
	if err != nil {
		return "", err
	}
	a := model.Analyze(raw)
	if a.Rejected() {
		var codes []string
		for _, r := range a.Rejections {
			codes = append(codes, r.Code)
		}
		return "reject:" + strings.Join(codes, ","), nil
	}
	inv, err := c.Weights(ctx, m)
	if err != nil {
		return "", err
	}
	if res := weights.Check(a.Config, inv); res.Status != verdict.Pass {
		return "fail:weights", nil
	}
	if cc := config.CrossCheck(a.Config, inv, nil); cc.Status != verdict.Pass {
		return "fail:consistency", nil
	}
	return "pass", nil
}

func upstreamHub(t *testing.T) *testenv.FakeHub {
	t.Helper()
	repos, err := testenv.UpstreamRepos()
	if err != nil {
		t.Fatal(err)
	}
	return testenv.NewFakeHub(t, repos...)
}

// TestUpstreamListTriage inspects the 16-model list against a hub holding
// the real configs and real header layouts with bodies that exist nowhere:
// every verdict is right, no byte past the probe window left the hub, no
// token reached the CDN, and a second run answers from the cache alone.
func TestUpstreamListTriage(t *testing.T) {
	hub := upstreamHub(t)
	cache := t.TempDir()
	ctx := context.Background()
	c := newClient(t, hub, cache, func(o *Options) { o.Token = testenv.HubToken })
	models := testenv.UpstreamModels()
	for _, m := range models {
		got, err := triage(ctx, c, m.ID)
		if err != nil {
			t.Fatalf("%s: %v", m.ID, err)
		}
		if got != m.Want {
			t.Errorf("%s: triage %s, want %s", m.ID, got, m.Want)
		}
	}
	if n := hub.CDNAuthorizations(); n != 0 {
		t.Errorf("%d CDN requests carried the token", n)
	}
	repos, _ := testenv.UpstreamRepos()
	for _, r := range repos {
		rejected := strings.HasPrefix(models[indexOf(models, r.ID)].Want, "reject")
		for name, sf := range r.Sparse {
			s := hub.Served(r.ID, name)
			if rejected && s.Bytes != 0 {
				t.Errorf("%s/%s: %d bytes served for a model rejected by its config", r.ID, name, s.Bytes)
			}
			headerEnd := int64(len(sf.Prefix))
			if limit := max(headerEnd, 100_000); s.MaxEnd > limit || s.Bytes > limit {
				t.Errorf("%s/%s: served %d bytes up to offset %d; header ends at %d, probe window 100000", r.ID, name, s.Bytes, s.MaxEnd, headerEnd)
			}
			if !rejected && s.MaxEnd < headerEnd {
				t.Errorf("%s/%s: header ends at %d but only %d bytes were read", r.ID, name, headerEnd, s.MaxEnd)
			}
		}
	}
	first := c.Stats()
	before := len(hub.Requests())
	if first.Requests == 0 || int64(before) != first.Requests {
		t.Errorf("client counted %d requests, hub saw %d", first.Requests, before)
	}

	again := newClient(t, hub, cache, func(o *Options) { o.Token = testenv.HubToken })
	for _, m := range models {
		got, err := triage(ctx, again, m.ID)
		if err != nil || got != m.Want {
			t.Errorf("second run %s: %s, %v; want %s", m.ID, got, err, m.Want)
		}
	}
	if after := hub.Requests(); len(after) != before || again.Stats().Requests != 0 {
		t.Errorf("second run made %d requests: %q", len(after)-before, after[before:])
	}
	offline := newClient(t, hub, cache, func(o *Options) { o.Offline = true })
	for _, m := range models {
		if got, err := triage(ctx, offline, m.ID); err != nil || got != m.Want {
			t.Errorf("offline run %s: %s, %v; want %s", m.ID, got, err, m.Want)
		}
	}
}

func indexOf(ms []testenv.HubModel, id string) int {
	for i, m := range ms {
		if m.ID == id {
			return i
		}
	}
	return -1
}

// TestProbe8ReadsHeadersOnly: with the probe at 8 bytes, the hub serves
// exactly each file's length prefix and header, not one byte more.
func TestProbe8ReadsHeadersOnly(t *testing.T) {
	hub := upstreamHub(t)
	c := newClient(t, hub, "", func(o *Options) { o.Token = testenv.HubToken; o.ProbeBytes = 8 })
	for _, id := range []string{"Qwen/Qwen3-4B", "meta-llama/Llama-3.2-1B", "mistralai/Mistral-7B-v0.3"} {
		if got, err := triage(context.Background(), c, id); err != nil || got != "pass" {
			t.Fatalf("%s: %s, %v", id, got, err)
		}
	}
	repos, _ := testenv.UpstreamRepos()
	checked := 0
	for _, r := range repos {
		for name, sf := range r.Sparse {
			s := hub.Served(r.ID, name)
			if s.Requests == 0 {
				continue
			}
			checked++
			if end := int64(len(sf.Prefix)); s.MaxEnd != end || s.Bytes != end || s.Requests != 2 {
				t.Errorf("%s/%s: %d requests served %d bytes up to %d, want 2 requests and exactly the %d header bytes", r.ID, name, s.Requests, s.Bytes, s.MaxEnd, end)
			}
		}
	}
	if checked != 1+3+3 {
		t.Errorf("checked %d files, want 7", checked)
	}
}

// TestInventoryEqualsLocal: the remote inventory of a real checkpoint is
// the one safetensors.Load gives for the downloaded folder, for a header
// longer than the probe (read in two ranges through the CDN redirect).
func TestInventoryEqualsLocal(t *testing.T) {
	dir := t.TempDir()
	tensors := map[string][]float32{}
	for i := range 3000 { // ~100 bytes of header each: well past the 100 KB probe
		tensors["model.layers.0.some_rather_long_tensor_name_to_grow_the_header."+strings.Repeat("x", i%7)+string(rune('a'+i%26))+itoa(i)] = []float32{float32(i)}
	}
	st := testenv.TinySafetensors(t, tensors)
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), st, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"architectures":["LlamaForCausalLM"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	const sha = "0123456789abcdef0123456789abcdef01234567"
	hub := testenv.NewFakeHub(t, testenv.RepoFromDir(t, "org/big-header", dir, map[string]string{"main": sha}))
	c := newClient(t, hub, t.TempDir(), nil)
	m, err := c.Resolve(context.Background(), ref(t, "org/big-header"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Commit != sha {
		t.Errorf("commit %s, want %s", m.Commit, sha)
	}
	remote, err := c.Weights(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	local, err := safetensors.Load(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(remote, local) {
		t.Errorf("remote inventory differs from the local one: %d vs %d tensors", remote.Len(), local.Len())
	}
	s := hub.Served("org/big-header", "model.safetensors")
	hdrEnd := int64(8) + int64(leUint64(st[:8]))
	if hdrEnd <= 100_000 {
		t.Fatalf("test header is %d bytes, want more than the probe", hdrEnd)
	}
	if s.Requests != 2 || s.MaxEnd != hdrEnd || s.Bytes != hdrEnd {
		t.Errorf("served %d requests, %d bytes up to %d; want 2 requests ending at the header end %d", s.Requests, s.Bytes, s.MaxEnd, hdrEnd)
	}
	// Every request after the first names the commit, not the branch.
	for i, r := range hub.Requests() {
		if i > 0 && strings.Contains(r, "/resolve/") && !strings.Contains(r, "/resolve/"+sha+"/") {
			t.Errorf("request %d not pinned to the commit: %s", i, r)
		}
	}
}

func itoa(i int) string {
	return strings.TrimLeft(strings.Replace(time.Duration(i).String(), "ns", "", 1), "0")
}

func leUint64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

func TestHubErrors(t *testing.T) {
	repos, err := testenv.UpstreamRepos()
	if err != nil {
		t.Fatal(err)
	}
	noWeights := &testenv.FakeRepo{ID: "org/pickles", Refs: map[string]string{"main": testenv.HubCommit("p")},
		Files: map[string][]byte{"config.json": []byte(testenv.UpstreamModels()[7].Config), "pytorch_model.bin": []byte("pickle")}}
	hub := testenv.NewFakeHub(t, append(repos, noWeights)...)
	cases := []struct {
		name, id, token string
		want            error
		msg             string
	}{
		{"gated without token", "meta-llama/Llama-3.2-1B", "", ErrGated, "accept its license at " + hub.URL() + "/meta-llama/Llama-3.2-1B and set HF_TOKEN"},
		{"gated, token not granted", "meta-llama/Llama-3.2-1B", "hf_other", ErrGated, "has not been granted access"},
		{"missing repo, anonymous", "org/nope", "", ErrUnauthorized, "not found, or private"},
		{"missing repo, with token", "org/nope", "hf_other", ErrNotFound, "repository not found"},
		{"missing revision", "Qwen/Qwen3-0.6B@v9", "", ErrNotFound, `revision "v9" does not exist`},
		{"pickle only", "org/pickles", "", ErrNoSafetensors, "never pickles"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, hub, t.TempDir(), func(o *Options) { o.Token = tc.token })
			_, err := triage(context.Background(), c, tc.id)
			var he *HubError
			if !errors.Is(err, tc.want) || !errors.As(err, &he) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %v containing %q", err, tc.want, tc.msg)
			}
			if c.Stats().Requests > 3 {
				t.Errorf("%d requests for a final error: it must not be retried", c.Stats().Requests)
			}
		})
	}
}

func TestRetries(t *testing.T) {
	hub := upstreamHub(t)
	ctx := context.Background()
	t.Run("429 honours Retry-After", func(t *testing.T) {
		hub.Inject(testenv.Fault{Match: "/Qwen/Qwen3-0.6B/resolve/main/config.json", Status: 429, RetryAfter: "1", Times: 1})
		c := newClient(t, hub, t.TempDir(), nil)
		start := time.Now()
		if got, err := triage(ctx, c, "Qwen/Qwen3-0.6B"); err != nil || got != "pass" {
			t.Fatalf("%s, %v", got, err)
		}
		if el := time.Since(start); el < time.Second {
			t.Errorf("retried after %s, before Retry-After's 1 s", el)
		}
	})
	t.Run("429 asking too long gives up at once", func(t *testing.T) {
		hub.Inject(testenv.Fault{Match: "/Qwen/Qwen3-1.7B/resolve/main/config.json", Status: 429, RetryAfter: "3600", Times: 1})
		c := newClient(t, hub, t.TempDir(), nil)
		_, err := triage(ctx, c, "Qwen/Qwen3-1.7B")
		if !errors.Is(err, ErrRateLimited) || !strings.Contains(err.Error(), "set HF_TOKEN") || c.Stats().Requests != 1 {
			t.Fatalf("%v after %d requests", err, c.Stats().Requests)
		}
	})
	t.Run("5xx retried with backoff", func(t *testing.T) {
		hub.Inject(testenv.Fault{Match: "cdn/", Status: 503, Times: 2})
		c := newClient(t, hub, t.TempDir(), nil)
		if got, err := triage(ctx, c, "Qwen/Qwen2.5-0.5B"); err != nil || got != "pass" {
			t.Fatalf("%s, %v", got, err)
		}
	})
	t.Run("5xx bounded", func(t *testing.T) {
		hub.Inject(testenv.Fault{Match: "/Qwen/Qwen2.5-1.5B/", Status: 500, Times: 100})
		c := newClient(t, hub, t.TempDir(), func(o *Options) { o.MaxAttempts = 3 })
		_, err := triage(ctx, c, "Qwen/Qwen2.5-1.5B")
		if !errors.Is(err, ErrServer) || !strings.Contains(err.Error(), "gave up after 3 attempts") || c.Stats().Requests != 3 {
			t.Fatalf("%v after %d requests", err, c.Stats().Requests)
		}
	})
}

func TestOfflineAndRefs(t *testing.T) {
	hub := upstreamHub(t)
	ctx := context.Background()
	cache := t.TempDir()
	off := newClient(t, hub, cache, func(o *Options) { o.Offline = true })
	if _, err := triage(ctx, off, "Qwen/Qwen3-0.6B"); !errors.Is(err, ErrOffline) || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Fatalf("offline, nothing cached: %v", err)
	}
	if n := len(hub.Requests()); n != 0 {
		t.Fatalf("offline client made %d requests", n)
	}
	on := newClient(t, hub, cache, nil)
	m, err := on.Resolve(ctx, ref(t, "Qwen/Qwen3-0.6B"))
	if err != nil || m.FromCache {
		t.Fatalf("online resolve: %v (from cache %v)", err, m != nil && m.FromCache)
	}
	// The branch is now mapped: an offline client resolves it, and the
	// commit itself, without weights cached yet.
	for _, id := range []string{"Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B@" + m.Commit} {
		mm, err := off.Resolve(ctx, ref(t, id))
		if err != nil || mm.Commit != m.Commit || !mm.FromCache {
			t.Errorf("offline resolve %s: %+v, %v", id, mm, err)
		}
	}
	if _, err := off.Weights(ctx, m); !errors.Is(err, ErrOffline) {
		t.Errorf("offline weights not cached: %v", err)
	}
	// Refresh re-resolves the branch online.
	n := len(hub.Requests())
	fresh := newClient(t, hub, cache, func(o *Options) { o.Refresh = true })
	if mm, err := fresh.Resolve(ctx, ref(t, "Qwen/Qwen3-0.6B")); err != nil || mm.FromCache {
		t.Errorf("refresh: %v", err)
	}
	if len(hub.Requests()) != n+1 {
		t.Errorf("refresh made %d requests, want 1", len(hub.Requests())-n)
	}
	// A damaged cache file is refetched, not trusted.
	hdr := filepath.Join(cache, "hubmeta", "models--Qwen--Qwen3-0.6B", "commits", m.Commit, "headers", "model.safetensors")
	if _, err := on.Weights(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hdr, []byte("short"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := on.Weights(ctx, m); err != nil {
		t.Errorf("damaged header cache: %v", err)
	}
	if b, _ := os.ReadFile(hdr); len(b) < 100 {
		t.Errorf("damaged header cache not rewritten (%d bytes)", len(b))
	}
}

func TestCancel(t *testing.T) {
	hub := upstreamHub(t)
	hub.SetLatency(10 * time.Second)
	c := newClient(t, hub, t.TempDir(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Resolve(ctx, ref(t, "Qwen/Qwen3-0.6B"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want the context's deadline", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("cancel took %s", el)
	}
}

func TestRequestTimeoutRetried(t *testing.T) {
	hub := upstreamHub(t)
	hub.SetLatency(300 * time.Millisecond)
	c := newClient(t, hub, t.TempDir(), func(o *Options) { o.RequestTimeout = 50 * time.Millisecond; o.MaxAttempts = 2 })
	_, err := c.Resolve(context.Background(), ref(t, "Qwen/Qwen3-0.6B"))
	if !errors.Is(err, ErrServer) || !strings.Contains(err.Error(), "within 50ms") || c.Stats().Requests != 2 {
		t.Errorf("%v after %d requests", err, c.Stats().Requests)
	}
}

func TestBadHeaderLengthNotFollowed(t *testing.T) {
	huge := make([]byte, 64)
	huge[0], huge[4] = 0xff, 0x01 // length ~4.3 GB: past the 100 MB cap
	const sha = "89abcdef0123456789abcdef0123456789abcdef"
	hub := testenv.NewFakeHub(t, &testenv.FakeRepo{ID: "org/bad", Refs: map[string]string{"main": sha},
		Files: map[string][]byte{"config.json": []byte(`{}`)}, Sparse: map[string]testenv.SparseFile{"model.safetensors": {Prefix: huge, Size: 1 << 33}}})
	c := newClient(t, hub, t.TempDir(), nil)
	m, err := c.Resolve(context.Background(), ref(t, "org/bad"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Weights(context.Background(), m)
	if !errors.Is(err, safetensors.ErrHeaderTooLarge) {
		t.Errorf("got %v, want ErrHeaderTooLarge", err)
	}
	if s := hub.Served("org/bad", "model.safetensors"); s.Requests != 1 || s.Bytes > 100_000 {
		t.Errorf("served %+v: a bad length must not lead to a second read", s)
	}
}

func TestAuthorizationNotForwarded(t *testing.T) {
	hub := upstreamHub(t)
	c := newClient(t, hub, t.TempDir(), func(o *Options) { o.Token = testenv.HubToken })
	if got, err := triage(context.Background(), c, "mistralai/Mistral-7B-v0.3"); err != nil || got != "pass" {
		t.Fatalf("%s, %v", got, err)
	}
	if n := hub.CDNAuthorizations(); n != 0 {
		t.Errorf("%d CDN requests carried the token", n)
	}
}

func TestParseContentRange(t *testing.T) {
	cases := []struct {
		in               string
		start, last, tot int64
		ok               bool
	}{
		{"bytes 0-99999/123456", 0, 99999, 123456, true},
		{"bytes 8-15/*", 8, 15, -1, true},
		{"bytes */42", -1, -1, 42, true},
		{"bytes 5-4/10", 0, 0, 0, false},
		{"bytes -1-4/10", 0, 0, 0, false},
		{"items 0-1/2", 0, 0, 0, false},
		{"bytes 0-1", 0, 0, 0, false},
		{"bytes 0-1/x", 0, 0, 0, false},
		{"", 0, 0, 0, false},
	}
	for _, c := range cases {
		s, l, tot, ok := parseContentRange(c.in)
		if ok != c.ok || ok && (s != c.start || l != c.last || tot != c.tot) {
			t.Errorf("%q: got %d %d %d %v", c.in, s, l, tot, ok)
		}
	}
}

func FuzzParseContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-99999/123456", "bytes */42", "bytes 1-0/1", "bytes 9223372036854775807-9223372036854775807/9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		start, last, total, ok := parseContentRange(s)
		if !ok {
			return
		}
		if start == -1 != (last == -1) || start > last || total < -1 {
			t.Errorf("%q: inconsistent %d %d %d", s, start, last, total)
		}
	})
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"3": 3 * time.Second, "0": 0, now.Add(5 * time.Second).Format(http1123): 5 * time.Second,
	} {
		if got, ok := retryAfter(in, now); !ok || got != want {
			t.Errorf("%q: %s %v, want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "-1", "soon"} {
		if _, ok := retryAfter(in, now); ok {
			t.Errorf("%q accepted", in)
		}
	}
}

const http1123 = "Mon, 02 Jan 2006 15:04:05 GMT"

// TestEmptyShard: a zero-byte file answers 416 to the probe; the
// safetensors parser then names the problem.
func TestEmptyShard(t *testing.T) {
	const sha = "fedcba9876543210fedcba9876543210fedcba98"
	hub := testenv.NewFakeHub(t, &testenv.FakeRepo{ID: "org/empty", Refs: map[string]string{"main": sha},
		Files: map[string][]byte{"config.json": []byte(`{}`), "model.safetensors": {}}})
	c := newClient(t, hub, t.TempDir(), nil)
	m, err := c.Resolve(context.Background(), ref(t, "org/empty"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Weights(context.Background(), m); !errors.Is(err, safetensors.ErrTruncated) {
		t.Errorf("got %v, want ErrTruncated", err)
	}
}

// TestRangeIgnored: a server that answers a range request with the whole
// file (200) is read only as far as asked, and the result is the same.
func TestRangeIgnored(t *testing.T) {
	st := testenv.TinySafetensors(t, map[string][]float32{"a": make([]float32, 100_000)})
	const sha = "00112233445566778899aabbccddeeff00112233"
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Repo-Commit", sha)
		if strings.HasSuffix(r.URL.Path, "/config.json") {
			w.Write([]byte(`{}`))
			return
		}
		if strings.HasSuffix(r.URL.Path, "/model.safetensors") {
			w.Header().Set("Content-Length", strconv.Itoa(len(st)))
			for off := 0; off < len(st); off += 4096 {
				n, err := w.Write(st[off:min(off+4096, len(st))])
				sent.Add(int64(n))
				if err != nil {
					return
				}
			}
			return
		}
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "nope", http.StatusNotFound)
	}))
	defer srv.Close()
	c, err := New(Options{Endpoint: srv.URL, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Resolve(context.Background(), ref(t, "org/plain"))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := c.Weights(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if tn, _ := inv.Tensor("a"); tn.Bytes() != 400_000 {
		t.Errorf("tensor a: %+v", tn)
	}
	if got := c.Stats().Bytes; got > 100_000+64 {
		t.Errorf("client read %d body bytes, want at most the probe", got)
	}
}
