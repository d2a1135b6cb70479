package hubmeta

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"phase0/read/hfcache"
	"phase0/read/safetensors"
)

// Model is a repository pinned to a commit, with its config.json.
type Model struct {
	Ref       hfcache.Ref // as asked for
	Commit    string      // the 40-hex commit every file was read at
	Config    []byte      // config.json as served
	FromCache bool        // true when no request was needed
}

// shardMeta is what phase0 keeps of one safetensors file: its first 8+n
// bytes (length prefix and header) and its full size, which the header's
// offsets are checked against.
type shardMeta struct {
	prefix []byte
	size   int64
}

// Resolve pins ref to a commit and returns its config.json. The first
// request goes to the ref's name; the commit the hub names in X-Repo-Commit
// is where every later request goes, so a branch that moves mid-inspection
// cannot mix files of two commits (huggingface_hub's hf_hub_download pins
// the same way).
func (c *Client) Resolve(ctx context.Context, ref hfcache.Ref) (*Model, error) {
	if _, err := hfcache.ParseID(ref.String()); err != nil {
		return nil, err
	}
	rev := ref.Revision
	if rev == "" {
		rev = hfcache.DefaultRevision
	}
	st := c.store(ref.ID)
	commit := ""
	if isCommit(rev) {
		commit = strings.ToLower(rev)
	} else if c.opt.Offline || !c.opt.Refresh {
		commit = st.ref(rev)
	}
	if commit != "" {
		if cfg, err := st.config(commit); err == nil {
			return &Model{Ref: ref, Commit: commit, Config: cfg, FromCache: true}, nil
		}
	}
	if c.opt.Offline {
		where := "phase0's metadata cache"
		if st.dir != "" {
			where = st.dir
		}
		return nil, &HubError{Repo: ref.ID, Msg: fmt.Sprintf("HF_HUB_OFFLINE is set and revision %s has no cached metadata in %s: unset it, or inspect the model once online", rev, where), Err: ErrOffline}
	}
	resp, err := c.get(ctx, ref.ID, rev, hfcache.ConfigFile, "")
	if err != nil {
		return nil, err
	}
	defer resp.close()
	if resp.StatusCode != http.StatusOK {
		return nil, &HubError{Repo: ref.ID, File: hfcache.ConfigFile, Status: resp.StatusCode, Msg: "answered a plain GET with " + resp.Status, Err: ErrBadResponse}
	}
	got := strings.ToLower(resp.commit)
	switch {
	case got == "" && commit == "" && !isCommit(rev):
		return nil, &HubError{Repo: ref.ID, File: hfcache.ConfigFile, Msg: "the answer names no commit (X-Repo-Commit), so later files could come from another one; is HF_ENDPOINT a Hugging Face hub?", Err: ErrBadResponse}
	case got == "":
		got = strings.ToLower(rev)
	case !isCommit(got):
		return nil, &HubError{Repo: ref.ID, File: hfcache.ConfigFile, Msg: fmt.Sprintf("X-Repo-Commit %q is not a 40-hex commit", got), Err: ErrBadResponse}
	case isCommit(rev) && got != strings.ToLower(rev):
		return nil, &HubError{Repo: ref.ID, File: hfcache.ConfigFile, Msg: fmt.Sprintf("asked for commit %s, the hub answered for %s", rev, got), Err: ErrBadResponse}
	}
	cfg, err := c.readBody(resp, -1, maxConfigBytes)
	if err != nil {
		return nil, &HubError{Repo: ref.ID, File: hfcache.ConfigFile, Msg: "reading the body: " + err.Error(), Err: errOr(err, ErrServer)}
	}
	if err := st.putConfig(got, cfg); err != nil {
		return nil, err
	}
	if !isCommit(rev) {
		if err := st.putRef(rev, got); err != nil {
			return nil, err
		}
	}
	return &Model{Ref: ref, Commit: got, Config: cfg}, nil
}

// Weights reads the safetensors index (if any) and every shard's header at
// m's commit and returns the same inventory safetensors.Load gives for a
// downloaded folder: it is built by safetensors.Load itself, over a file
// system holding config.json, the index and each shard as its header bytes
// with its real size.
func (c *Client) Weights(ctx context.Context, m *Model) (*safetensors.Inventory, error) {
	fsys, err := c.FS(ctx, m)
	if err != nil {
		return nil, err
	}
	inv, err := safetensors.Load(fsys)
	if err != nil {
		return nil, fmt.Errorf("%s@%s: %w", m.Ref.ID, m.Commit[:12], err)
	}
	return inv, nil
}

// FS is m's metadata as a read-only file system: config.json, the index if
// any, and each shard as its header bytes with its real size (reads past the
// header fail). The same gates that read a downloaded folder read this one.
func (c *Client) FS(ctx context.Context, m *Model) (fs.FS, error) {
	st := c.store(m.Ref.ID)
	index, shards, err := st.weights(m.Commit)
	if err != nil {
		if c.opt.Offline {
			return nil, &HubError{Repo: m.Ref.ID, Msg: fmt.Sprintf("HF_HUB_OFFLINE is set and the safetensors headers of commit %s are not cached: unset it, or inspect the model once online", m.Commit), Err: ErrOffline}
		}
		if index, shards, err = c.fetchWeights(ctx, m); err != nil {
			return nil, err
		}
		if err := st.putWeights(m.Commit, index, shards); err != nil {
			return nil, err
		}
	}
	return newMetaFS(m.Config, index, shards), nil
}

func (c *Client) fetchWeights(ctx context.Context, m *Model) ([]byte, map[string]shardMeta, error) {
	repo := m.Ref.ID
	index, err := c.fetchIndex(ctx, m)
	if errors.Is(err, ErrNotFound) {
		meta, err := c.fetchHeader(ctx, m, safetensors.SingleFile)
		if errors.Is(err, ErrNotFound) {
			return nil, nil, &HubError{Repo: repo, Msg: fmt.Sprintf("neither %s nor %s exists at commit %s: phase0 reads safetensors checkpoints only (never pickles)", safetensors.SingleFile, safetensors.IndexFile, m.Commit), Err: ErrNoSafetensors}
		}
		if err != nil {
			return nil, nil, err
		}
		return nil, map[string]shardMeta{safetensors.SingleFile: meta}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	ix, err := safetensors.ReadIndex(bytes.NewReader(index), safetensors.IndexFile)
	if err != nil {
		return nil, nil, fmt.Errorf("%s@%s: %w", repo, m.Commit[:12], err)
	}
	names := ix.Shards()
	shards := make(map[string]shardMeta, len(names))
	var mu sync.Mutex
	var firstErr error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, c.opt.ShardWorkers)
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			meta, err := c.fetchHeader(ctx, m, name)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
					cancel()
				}
				return
			}
			shards[name] = meta
		}()
	}
	wg.Wait()
	if firstErr != nil {
		if errors.Is(firstErr, ErrNotFound) {
			return nil, nil, fmt.Errorf("%s names a shard that is not in the repository: %w", safetensors.IndexFile, firstErr)
		}
		return nil, nil, firstErr
	}
	return index, shards, nil
}

func (c *Client) fetchIndex(ctx context.Context, m *Model) ([]byte, error) {
	resp, err := c.get(ctx, m.Ref.ID, m.Commit, safetensors.IndexFile, "")
	if err != nil {
		return nil, err
	}
	defer resp.close()
	if resp.StatusCode != http.StatusOK {
		return nil, &HubError{Repo: m.Ref.ID, File: safetensors.IndexFile, Status: resp.StatusCode, Msg: "answered a plain GET with " + resp.Status, Err: ErrBadResponse}
	}
	data, err := c.readBody(resp, -1, maxIndexBytes)
	if err != nil {
		return nil, &HubError{Repo: m.Ref.ID, File: safetensors.IndexFile, Msg: "reading the body: " + err.Error(), Err: errOr(err, ErrServer)}
	}
	return data, nil
}

// fetchHeader reads a shard's length prefix and header with at most two
// range requests: a probe of ProbeBytes from offset 0 and, when the header
// is longer than that, the rest of it. Nothing past max(ProbeBytes, 8+n) is
// asked for, and nothing past the header is kept.
func (c *Client) fetchHeader(ctx context.Context, m *Model, file string) (shardMeta, error) {
	bad := func(format string, args ...any) error {
		return &HubError{Repo: m.Ref.ID, File: file, Msg: fmt.Sprintf(format, args...), Err: ErrBadResponse}
	}
	buf, size, err := c.fetchRange(ctx, m, file, 0, c.opt.ProbeBytes, -1)
	if err != nil {
		return shardMeta{}, err
	}
	if len(buf) < 8 {
		// Too short for a length: let the safetensors parser say so.
		return shardMeta{prefix: buf, size: size}, nil
	}
	n := binary.LittleEndian.Uint64(buf[:8])
	if n > safetensors.MaxHeaderSize || n > uint64(size-8) {
		// Invalid; keep the 8 bytes so the parser reports it with its own words.
		return shardMeta{prefix: buf[:8], size: size}, nil
	}
	end := 8 + int64(n)
	if int64(len(buf)) < end {
		rest, size2, err := c.fetchRange(ctx, m, file, int64(len(buf)), end-int64(len(buf)), size)
		if err != nil {
			return shardMeta{}, err
		}
		if size2 != size {
			return shardMeta{}, bad("the file's size changed between two reads (%d then %d bytes)", size, size2)
		}
		buf = append(buf, rest...)
	}
	return shardMeta{prefix: buf[:end], size: size}, nil
}

// fetchRange asks for length bytes at off and returns what it got (less
// only when the file ends first) and the file's full size. knownSize, when
// not -1, is the size an earlier read reported.
func (c *Client) fetchRange(ctx context.Context, m *Model, file string, off, length, knownSize int64) ([]byte, int64, error) {
	bad := func(format string, args ...any) ([]byte, int64, error) {
		return nil, 0, &HubError{Repo: m.Ref.ID, File: file, Msg: fmt.Sprintf(format, args...), Err: ErrBadResponse}
	}
	resp, err := c.get(ctx, m.Ref.ID, m.Commit, file, fmt.Sprintf("bytes=%d-%d", off, off+length-1))
	if err != nil {
		return nil, 0, err
	}
	defer resp.close()
	var size, want int64
	switch resp.StatusCode {
	case http.StatusPartialContent:
		start, last, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || total < 0 {
			return bad("range answer with Content-Range %q, want \"bytes a-b/size\"", resp.Header.Get("Content-Range"))
		}
		if start != off || last < start || last >= off+length || last >= total {
			return bad("asked for bytes %d-%d, got %d-%d of %d", off, off+length-1, start, last, total)
		}
		if last != min(off+length, total)-1 {
			return bad("asked for bytes %d-%d of %d, got only %d-%d", off, off+length-1, total, start, last)
		}
		size, want = total, last-start+1
	case http.StatusOK:
		// A server that ignores Range sends the whole file: read only what
		// was asked for and drop the connection.
		if resp.ContentLength < 0 {
			return bad("the server ignored the range request and sent no Content-Length")
		}
		size = resp.ContentLength
		if off >= size {
			return nil, size, nil
		}
		if _, err := c.readBody(resp, off, 0); err != nil {
			return bad("skipping to offset %d: %v", off, err)
		}
		want = min(length, size-off)
	case http.StatusRequestedRangeNotSatisfiable:
		_, _, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || total < 0 {
			return bad("range %d-%d not satisfiable and no file size given", off, off+length-1)
		}
		if total > off {
			return bad("range %d-%d refused although the file has %d bytes", off, off+length-1, total)
		}
		return nil, total, nil
	}
	if knownSize >= 0 && size != knownSize {
		return bad("the file's size changed between two reads (%d then %d bytes)", knownSize, size)
	}
	data, err := c.readBody(resp, want, 0)
	if err != nil {
		return nil, 0, &HubError{Repo: m.Ref.ID, File: file, Msg: "reading the body: " + err.Error(), Err: errOr(err, ErrServer)}
	}
	return data, size, nil
}

// parseContentRange reads "bytes a-b/total" or "bytes */total"; total is -1
// for "*". For the unsatisfied form start and last are -1.
func parseContentRange(v string) (start, last, total int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	total = -1
	if tot != "*" {
		t, err := strconv.ParseInt(tot, 10, 64)
		if err != nil || t < 0 {
			return 0, 0, 0, false
		}
		total = t
	}
	if rng == "*" {
		return -1, -1, total, true
	}
	a, b, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, 0, false
	}
	s, err1 := strconv.ParseInt(a, 10, 64)
	l, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || s < 0 || l < s {
		return 0, 0, 0, false
	}
	return s, l, total, true
}

func isCommit(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// errOr keeps a sentinel err already carries (ErrTooLarge, a context
// error), else uses def.
func errOr(err, def error) error {
	for _, s := range []error{ErrTooLarge, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, s) {
			return s
		}
	}
	return def
}
