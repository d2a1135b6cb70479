// Package hubmeta inspects a model on the Hugging Face Hub without
// downloading it: config.json, the safetensors index and, for each shard,
// only the 8-byte length and the JSON header, read with HTTP range requests.
// Everything fetched is cached under phase0's cache keyed by repository and
// commit, so a second look at the same revision makes no request at all.
package hubmeta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultEndpoint is the hub huggingface_hub talks to without HF_ENDPOINT.
const DefaultEndpoint = "https://huggingface.co"

// Options are the settings the caller resolves (flags, PHASE0_*, HF_*).
type Options struct {
	Endpoint string // HF_ENDPOINT; "" is DefaultEndpoint
	Token    string // HF_TOKEN; sent to Endpoint's host only, never after a redirect elsewhere
	Offline  bool   // HF_HUB_OFFLINE: answer from the metadata cache or fail
	// CacheDir is phase0's cache folder; metadata lives in CacheDir/hubmeta.
	// Empty disables the cache.
	CacheDir string
	// Refresh re-resolves branch and tag names that the cache already maps
	// to a commit (ignored offline). Without it a name resolved once stays
	// pinned, which is what makes a re-run free.
	Refresh bool

	Client         *http.Client  // nil: a client built on http.DefaultTransport
	RequestTimeout time.Duration // per attempt, body included; 0 is 30 s
	MaxAttempts    int           // per request, for 429, 5xx and broken connections; 0 is 5
	MaxRetryWait   time.Duration // longest single wait (Retry-After or backoff); 0 is 30 s
	BackoffBase    time.Duration // first 5xx backoff, doubled each time; 0 is 500 ms
	// ProbeBytes is the first range read of a shard: huggingface_hub reads
	// 100 KB, which holds the whole header of most checkpoints, so one round
	// trip usually suffices. Set 8 to never receive a byte past the header
	// at the price of a second request. 0 is 100,000; below 8 is 8.
	ProbeBytes int64
	// ShardWorkers bounds concurrent header reads within one model; 0 is 4.
	ShardWorkers int
}

// Stats counts what a Client sent and received.
type Stats struct {
	Requests int64 // HTTP requests, each redirect hop counted
	Bytes    int64 // response body bytes read
}

// Client fetches hub metadata. It is safe for concurrent use.
type Client struct {
	opt      Options
	endpoint *url.URL
	http     *http.Client
	requests atomic.Int64
	bytes    atomic.Int64
	sleep    func(context.Context, time.Duration) error
}

// Bounds. Config and index match what the local readers accept
// (model.MaxConfigBytes; safetensors' and hfcache's 64 MiB index cap), so a
// model inspected remotely is held to the same limits as a downloaded one:
// real configs are a few KiB and the index of a 400B-parameter checkpoint is
// about 2 MB. The header cap is the safetensors format's own 100 MB.
const (
	maxConfigBytes = 4 << 20
	maxIndexBytes  = 64 << 20
	maxRedirects   = 10
)

// New checks the options and returns a Client.
func New(opt Options) (*Client, error) {
	if opt.Endpoint == "" {
		opt.Endpoint = DefaultEndpoint
	}
	ep, err := url.Parse(strings.TrimRight(opt.Endpoint, "/"))
	if err != nil || (ep.Scheme != "http" && ep.Scheme != "https") || ep.Host == "" {
		return nil, fmt.Errorf("hub endpoint %q (HF_ENDPOINT) is not an http(s) URL", opt.Endpoint)
	}
	if opt.RequestTimeout <= 0 {
		opt.RequestTimeout = 30 * time.Second
	}
	if opt.MaxAttempts <= 0 {
		opt.MaxAttempts = 5
	}
	if opt.MaxRetryWait <= 0 {
		opt.MaxRetryWait = 30 * time.Second
	}
	if opt.BackoffBase <= 0 {
		opt.BackoffBase = 500 * time.Millisecond
	}
	switch {
	case opt.ProbeBytes == 0:
		opt.ProbeBytes = 100_000
	case opt.ProbeBytes < 8:
		opt.ProbeBytes = 8
	}
	if opt.ShardWorkers <= 0 {
		opt.ShardWorkers = 4
	}
	c := &Client{opt: opt, endpoint: ep, sleep: sleepCtx}
	hc := &http.Client{}
	if opt.Client != nil {
		*hc = *opt.Client
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = countingTransport{base: base, n: &c.requests}
	hc.CheckRedirect = checkRedirect
	hc.Timeout = 0 // per-attempt contexts bound each request, body included
	c.http = hc
	return c, nil
}

// Stats reports the requests and body bytes so far.
func (c *Client) Stats() Stats {
	return Stats{Requests: c.requests.Load(), Bytes: c.bytes.Load()}
}

type countingTransport struct {
	base http.RoundTripper
	n    *atomic.Int64
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.base.RoundTrip(r)
}

// hopKey carries a *hops through the request context, so the commit the hub
// names on a redirect answer is not lost when the client follows it.
type hopKey struct{}

type hops struct{ commit string }

// checkRedirect follows the hub's redirects (renamed repositories, LFS files
// on a CDN). net/http re-sends the first request's headers, Range included,
// but it keeps Authorization for any host with the same name or a subdomain,
// whatever the port: the CDN (cdn-lfs.huggingface.co) is a subdomain, and a
// signed CDN URL must not receive the user's token. So the token goes only
// where it was first sent, as requests (and so huggingface_hub) does.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	first := via[0].URL
	if req.URL.Host != first.Host || req.URL.Scheme != first.Scheme {
		req.Header.Del("Authorization")
	}
	if h, ok := req.Context().Value(hopKey{}).(*hops); ok && req.Response != nil && h.commit == "" {
		h.commit = req.Response.Header.Get("X-Repo-Commit")
	}
	return nil
}

// response is a successful answer whose body is bounded by the attempt's
// timeout; close it to release the attempt.
type response struct {
	*http.Response
	commit string // X-Repo-Commit, from the first answer that carried one
	cancel context.CancelFunc
}

func (r *response) close() {
	r.Body.Close()
	r.cancel()
}

// readBody reads exactly want bytes (or up to limit when want < 0) and
// counts them.
func (c *Client) readBody(r *response, want, limit int64) ([]byte, error) {
	if want >= 0 {
		buf := make([]byte, want)
		n, err := io.ReadFull(r.Body, buf)
		c.bytes.Add(int64(n))
		if err != nil {
			return nil, fmt.Errorf("read %d of %d bytes: %w", n, want, err)
		}
		return buf, nil
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	c.bytes.Add(int64(len(data)))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes: %w", limit, ErrTooLarge)
	}
	return data, nil
}

// fileURL is the resolve URL of a file at a revision. The revision is one
// path segment ("refs/pr/1" becomes "refs%2Fpr%2F1", as huggingface_hub
// quotes it); the file keeps its slashes.
func (c *Client) fileURL(repo, rev, file string) string {
	parts := strings.Split(file, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return c.endpoint.String() + "/" + repo + "/resolve/" + url.PathEscape(rev) + "/" + strings.Join(parts, "/")
}

// get sends a GET with retries on 429, 5xx and broken connections. It
// returns 200, 206 and 416 answers to the caller and turns every other
// status into a *HubError naming repo and file.
func (c *Client) get(ctx context.Context, repo, rev, file, rangeHdr string) (*response, error) {
	u := c.fileURL(repo, rev, file)
	var last *HubError
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		resp, wait, herr := c.try(ctx, u, repo, rev, file, rangeHdr)
		if resp != nil {
			return resp, nil
		}
		if wait < 0 { // not retryable
			return nil, herr
		}
		last = herr
		if attempt >= c.opt.MaxAttempts {
			last.Msg += fmt.Sprintf(" (gave up after %d attempts)", attempt)
			return nil, last
		}
		if wait == 0 {
			wait = min(c.opt.BackoffBase<<(attempt-1), c.opt.MaxRetryWait)
		}
		if err := c.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// try makes one attempt. On failure wait is <0 for a final error, 0 for
// "retry after the usual backoff", >0 for "retry after this long".
func (c *Client) try(ctx context.Context, u, repo, rev, file, rangeHdr string) (*response, time.Duration, *HubError) {
	actx, cancel := context.WithTimeout(ctx, c.opt.RequestTimeout)
	h := &hops{}
	req, err := http.NewRequestWithContext(context.WithValue(actx, hopKey{}, h), http.MethodGet, u, nil)
	if err != nil {
		cancel()
		return nil, -1, &HubError{Repo: repo, File: file, Msg: err.Error(), Err: ErrBadResponse}
	}
	req.Header.Set("User-Agent", "phase0-hubmeta")
	if rangeHdr != "" {
		req.Header.Set("Range", rangeHdr)
	}
	if c.opt.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.opt.Token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		cancel()
		if ctx.Err() != nil {
			return nil, -1, &HubError{Repo: repo, File: file, Msg: ctx.Err().Error(), Err: ctx.Err()}
		}
		msg := "no answer from " + c.endpoint.Host + ": " + err.Error()
		if errors.Is(err, context.DeadlineExceeded) {
			msg = fmt.Sprintf("no answer from %s within %s", c.endpoint.Host, c.opt.RequestTimeout)
		}
		return nil, 0, &HubError{Repo: repo, File: file, Msg: msg, Err: ErrServer}
	}
	commit := h.commit
	if commit == "" {
		commit = resp.Header.Get("X-Repo-Commit")
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusPartialContent, http.StatusRequestedRangeNotSatisfiable:
		return &response{Response: resp, commit: commit, cancel: cancel}, 0, nil
	}
	// Error bodies are short; read a little so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	cancel()
	wait, herr := c.classify(resp, repo, rev, file)
	return nil, wait, herr
}

// classify turns an error status into a message saying what to do.
func (c *Client) classify(resp *http.Response, repo, rev, file string) (time.Duration, *HubError) {
	code := resp.Header.Get("X-Error-Code")
	e := &HubError{Repo: repo, File: file, Status: resp.StatusCode, Code: code}
	page := c.endpoint.String() + "/" + repo
	hasToken := c.opt.Token != ""
	switch st := resp.StatusCode; {
	case code == "GatedRepo" && !hasToken:
		e.Err, e.Msg = ErrGated, "the repository is gated: accept its license at "+page+" and set HF_TOKEN to a token of that account"
	case code == "GatedRepo":
		e.Err, e.Msg = ErrGated, "the repository is gated and HF_TOKEN's account has not been granted access: accept the license at "+page+" with that account (approval can take a while)"
	case st == http.StatusUnauthorized && !hasToken:
		e.Err, e.Msg = ErrUnauthorized, "repository not found, or private (the hub answers 401 to anonymous requests for both): check the id, or set HF_TOKEN if it is private"
	case st == http.StatusUnauthorized:
		e.Err, e.Msg = ErrUnauthorized, "HF_TOKEN was refused: it is invalid or expired, or the repository is private to another account"
	case st == http.StatusForbidden:
		e.Err, e.Msg = ErrForbidden, "HF_TOKEN does not allow reading this repository (a fine-grained token needs read access to it)"
	case st == http.StatusNotFound && code == "RevisionNotFound":
		e.Err, e.Msg = ErrNotFound, fmt.Sprintf("revision %q does not exist in the repository", rev)
	case st == http.StatusNotFound && code == "EntryNotFound":
		e.Err, e.Msg = ErrNotFound, fmt.Sprintf("no such file at revision %s", rev)
	case st == http.StatusNotFound:
		e.Err, e.Msg = ErrNotFound, "repository not found on "+c.endpoint.Host+": check the id"
	case st == http.StatusTooManyRequests:
		e.Err, e.Msg = ErrRateLimited, "rate limited by "+c.endpoint.Host+"; wait and retry"
		if !hasToken {
			e.Msg += ", or set HF_TOKEN (anonymous requests have lower limits)"
		}
		wait, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now())
		if !ok {
			return 0, e
		}
		if wait > c.opt.MaxRetryWait {
			e.Msg += fmt.Sprintf(" (the hub asks for %s, more than the %s phase0 waits)", wait.Round(time.Second), c.opt.MaxRetryWait)
			return -1, e
		}
		return max(wait, time.Millisecond), e
	case st >= 500:
		e.Err, e.Msg = ErrServer, c.endpoint.Host+" failed to answer; the hub may be down, retry later"
		if wait, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok && wait <= c.opt.MaxRetryWait {
			return max(wait, time.Millisecond), e
		}
		return 0, e
	default:
		e.Err, e.Msg = ErrBadResponse, "unexpected status "+resp.Status
	}
	if m := resp.Header.Get("X-Error-Message"); m != "" && e.Err != ErrRateLimited {
		e.Msg += " [hub: " + m + "]"
	}
	return -1, e
}

// retryAfter reads Retry-After as seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		if s > 1<<20 { // far beyond any cap; avoid overflowing Duration
			s = 1 << 20
		}
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
