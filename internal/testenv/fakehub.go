package testenv

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// FakeHub is a local Hugging Face Hub answering the endpoints huggingface_hub
// calls for model_info, snapshot_download and hf_hub_download:
//
//	GET  /api/models/{repo}[/revision/{rev}]   repo info (siblings, sha)
//	GET  /api/models/{repo}/tree/{rev}         file listing
//	HEAD|GET /{repo}/resolve/{rev}/{file}      file metadata and bytes
//	GET  {cdn}/{sha256}                        LFS bytes after the redirect
//
// Regular files are served directly with their git blob sha1 as ETag; LFS
// files (*.safetensors) answer with a 302 to a second server carrying
// X-Linked-Etag and X-Linked-Size, as the real Hub does. Both servers honour
// Range (206 with Content-Range, 416 when unsatisfiable). Like the real CDN,
// whose URLs are signed, the CDN refuses a request carrying Authorization
// (400), so a client leaking the user's token past the redirect fails.
//
// Errors carry X-Error-Code and X-Error-Message the way the Hub sends them,
// so huggingface_hub raises its own typed errors: an unknown repository is
// RepoNotFound (401 without a token, 404 with one), an unknown revision
// RevisionNotFound (404), a missing file EntryNotFound (404), and the files
// of a gated repository GatedRepo (401 without a token, 403 with a token that
// was not granted access). Repositories must not change after NewFakeHub.
//
// For clients under test it also injects latency and faults (429 with
// Retry-After, 5xx) and counts the body bytes served per file, with the
// furthest offset reached, so a test can prove which bytes were never sent.
type FakeHub struct {
	repos map[string]*FakeRepo
	files map[string]map[string]fakeFile // repo id -> file name -> file
	lfs   map[string]fileKey             // sha256 -> where the CDN's bytes come from
	srv   *httptest.Server
	cdn   *httptest.Server // another origin, as the real LFS/CDN host is

	latency atomic.Int64 // nanoseconds slept before answering any request

	mu       sync.Mutex
	requests []string
	faults   []*Fault
	served   map[fileKey]*FileStats
	cdnAuth  int
}

// FakeRepo is one model repository: the same files at every commit.
type FakeRepo struct {
	ID    string
	Refs  map[string]string // branch or tag -> 40-hex commit sha
	Files map[string][]byte
	// Sparse files are served as Prefix followed by zeros up to Size, so a
	// repository can hold a checkpoint of real size (a 14 GB shard) whose
	// header is real and whose tensor bytes exist nowhere.
	Sparse map[string]SparseFile
	// Gated repositories list their files to anyone but serve them only to
	// a request carrying one of Tokens as its bearer token.
	Gated  bool
	Tokens []string
}

// SparseFile is a large file of which only the start is real.
type SparseFile struct {
	Prefix []byte
	Size   int64 // >= len(Prefix)
}

// Fault makes the hub answer Status (with Retry-After when set) instead of
// serving, to the next Times requests whose "METHOD path" contains Match
// ("cdn/" prefixes CDN paths, as in Requests).
type Fault struct {
	Match      string
	Status     int
	RetryAfter string
	Times      int
}

// FileStats is what the hub served of one file, over both servers.
type FileStats struct {
	Requests int   // GETs that reached the file's bytes (redirects not counted)
	Bytes    int64 // body bytes written
	MaxEnd   int64 // furthest offset served, exclusive: no byte at or after it left the hub
}

type fileKey struct{ repo, name string }

type fakeFile struct {
	size   int64
	open   func() io.ReadSeeker
	blobID string // git sha1 of the blob (or of the LFS pointer on the real Hub)
	lfsSHA string // sha256 for LFS files
}

// NewFakeHub starts the Hub and its CDN; both stop when the test ends.
func NewFakeHub(t testing.TB, repos ...*FakeRepo) *FakeHub {
	t.Helper()
	h := StartFakeHub(repos...)
	t.Cleanup(h.Close)
	return h
}

// StartFakeHub starts the Hub and its CDN outside a test (benchmarks);
// Close stops them.
func StartFakeHub(repos ...*FakeRepo) *FakeHub {
	h := &FakeHub{repos: map[string]*FakeRepo{}, files: map[string]map[string]fakeFile{},
		lfs: map[string]fileKey{}, served: map[fileKey]*FileStats{}}
	for _, r := range repos {
		h.repos[r.ID] = r
		files := map[string]fakeFile{}
		for _, n := range r.FileNames() {
			f := r.file(n)
			files[n] = f
			if f.lfsSHA != "" {
				h.lfs[f.lfsSHA] = fileKey{r.ID, n}
			}
		}
		h.files[r.ID] = files
	}
	h.srv = httptest.NewServer(h.logged("", h.serve))
	h.cdn = httptest.NewServer(h.logged("cdn", h.serveCDN))
	return h
}

// Close stops both servers.
func (h *FakeHub) Close() {
	h.srv.Close()
	h.cdn.Close()
}

// URL is the Hub's address, the value for HF_ENDPOINT.
func (h *FakeHub) URL() string { return h.srv.URL }

// SetLatency delays every later answer of both servers by d.
func (h *FakeHub) SetLatency(d time.Duration) { h.latency.Store(int64(d)) }

// Inject adds a fault; faults are tried in the order added.
func (h *FakeHub) Inject(f Fault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults = append(h.faults, &f)
}

// Requests lists every request both servers received so far, in order, as
// "METHOD path" ("GET cdn/<sha256>" for the CDN).
func (h *FakeHub) Requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.requests)
}

// Served reports what was served of one file of one repository.
func (h *FakeHub) Served(repo, file string) FileStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.served[fileKey{repo, file}]; ok {
		return *s
	}
	return FileStats{}
}

// CDNAuthorizations counts CDN requests that carried an Authorization
// header (each was refused).
func (h *FakeHub) CDNAuthorizations() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cdnAuth
}

func (h *FakeHub) logged(prefix string, serve http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		line := r.Method + " " + prefix + r.URL.EscapedPath()
		h.mu.Lock()
		h.requests = append(h.requests, line)
		var fault *Fault
		for _, f := range h.faults {
			if f.Times > 0 && strings.Contains(line, f.Match) {
				f.Times--
				fault = f
				break
			}
		}
		h.mu.Unlock()
		if d := time.Duration(h.latency.Load()); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if fault != nil {
			if fault.RetryAfter != "" {
				w.Header().Set("Retry-After", fault.RetryAfter)
			}
			http.Error(w, http.StatusText(fault.Status), fault.Status)
			return
		}
		serve(w, r)
	}
}

// RepoFromDir loads every regular file under dir (recursively, with
// slash-separated names) into a repository with the given refs.
func RepoFromDir(t testing.TB, id, dir string, refs map[string]string) *FakeRepo {
	t.Helper()
	files := map[string][]byte{}
	err := fs.WalkDir(os.DirFS(dir), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path)))
		files[path] = b
		return err
	})
	if err != nil {
		t.Fatalf("loading %s into fake repo %s: %v", dir, id, err)
	}
	return &FakeRepo{ID: id, Refs: refs, Files: files}
}

// FileNames lists the repository's files, sparse ones included, sorted.
func (r *FakeRepo) FileNames() []string {
	var names []string
	for n := range r.Files {
		names = append(names, n)
	}
	for n := range r.Sparse {
		if _, dup := r.Files[n]; !dup {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

func (r *FakeRepo) file(name string) fakeFile {
	if data, ok := r.Files[name]; ok {
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", len(data))
		h.Write(data)
		f := fakeFile{size: int64(len(data)), open: func() io.ReadSeeker { return bytes.NewReader(data) }, blobID: hex.EncodeToString(h.Sum(nil))}
		if strings.HasSuffix(name, ".safetensors") {
			sum := sha256.Sum256(data)
			f.lfsSHA = hex.EncodeToString(sum[:])
		}
		return f
	}
	sp := r.Sparse[name]
	// Hashing 14 GB of zeros would be pointless: the ids only have to be
	// distinct and stable, so they hash the repo, the name, the prefix and
	// the size.
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00", r.ID, name, sp.Size)
	h.Write(sp.Prefix)
	sum := hex.EncodeToString(h.Sum(nil))
	return fakeFile{size: sp.Size, open: func() io.ReadSeeker { return &sparseReader{prefix: sp.Prefix, size: sp.Size} },
		blobID: sum[:40], lfsSHA: sum}
}

// sparseReader reads prefix then zeros up to size.
type sparseReader struct {
	prefix []byte
	size   int64
	off    int64
}

func (s *sparseReader) Read(p []byte) (int, error) {
	if s.off >= s.size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), s.size-s.off)]
	n := 0
	if s.off < int64(len(s.prefix)) {
		n = copy(p, s.prefix[s.off:])
	}
	clear(p[n:])
	s.off += int64(len(p))
	return len(p), nil
}

func (s *sparseReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += s.off
	case io.SeekEnd:
		offset += s.size
	}
	if offset < 0 {
		return 0, fmt.Errorf("negative seek %d", offset)
	}
	s.off = offset
	return offset, nil
}

// serveFile serves f honouring Range and records the bytes that left.
func (h *FakeHub) serveFile(w http.ResponseWriter, r *http.Request, key fileKey, f fakeFile) {
	cw := &countingWriter{ResponseWriter: w}
	http.ServeContent(cw, r, key.name, time.Time{}, f.open())
	if r.Method != http.MethodGet || (cw.status != http.StatusOK && cw.status != http.StatusPartialContent) {
		return
	}
	start := int64(0)
	if cr := w.Header().Get("Content-Range"); cw.status == http.StatusPartialContent {
		fmt.Sscanf(cr, "bytes %d-", &start)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.served[key]
	if s == nil {
		s = &FileStats{}
		h.served[key] = s
	}
	s.Requests++
	s.Bytes += cw.n
	s.MaxEnd = max(s.MaxEnd, start+cw.n)
}

type countingWriter struct {
	http.ResponseWriter
	n      int64
	status int
}

func (c *countingWriter) WriteHeader(code int) {
	c.status = code
	c.ResponseWriter.WriteHeader(code)
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

// commit maps a revision to a commit sha: a ref, or a sha one of them names.
func (r *FakeRepo) commit(rev string) (string, bool) {
	if sha, ok := r.Refs[rev]; ok {
		return sha, true
	}
	for _, sha := range r.Refs {
		if sha == rev {
			return sha, true
		}
	}
	return "", false
}

// granted reports whether the request may read a gated repository's files.
func (r *FakeRepo) granted(req *http.Request) bool {
	token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	return ok && slices.Contains(r.Tokens, token)
}

func hubError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("X-Error-Code", code)
	w.Header().Set("X-Error-Message", msg)
	http.Error(w, msg, status)
}

// repoNotFound answers as the Hub does: 401 to anonymous requests, so that a
// private repository's existence is not revealed, 404 to authenticated ones.
func repoNotFound(w http.ResponseWriter, r *http.Request) {
	status := http.StatusUnauthorized
	if r.Header.Get("Authorization") != "" {
		status = http.StatusNotFound
	}
	hubError(w, status, "RepoNotFound", "Repository not found")
}

// segments splits the escaped path so that an encoded "/" in a revision
// ("refs%2Fpr%2F1") stays inside its segment.
func segments(r *http.Request) []string {
	parts := strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/")
	for i, p := range parts {
		if u, err := url.PathUnescape(p); err == nil {
			parts[i] = u
		}
	}
	return parts
}

func (h *FakeHub) serve(w http.ResponseWriter, r *http.Request) {
	seg := segments(r)
	switch {
	case len(seg) >= 4 && seg[0] == "api" && seg[1] == "models":
		h.serveAPI(w, r, seg[2:])
	case len(seg) >= 5 && seg[2] == "resolve":
		h.serveResolve(w, r, seg[0]+"/"+seg[1], seg[3], strings.Join(seg[4:], "/"))
	default:
		http.NotFound(w, r)
	}
}

func (h *FakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	key, ok := h.lfs[strings.TrimPrefix(r.URL.Path, "/")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("Authorization") != "" {
		h.mu.Lock()
		h.cdnAuth++
		h.mu.Unlock()
		http.Error(w, "Only one auth mechanism allowed; only the signature query parameter may be given", http.StatusBadRequest)
		return
	}
	h.serveFile(w, r, key, h.files[key.repo][key.name])
}

func (h *FakeHub) serveAPI(w http.ResponseWriter, r *http.Request, seg []string) {
	repo, ok := h.repos[seg[0]+"/"+seg[1]]
	if !ok {
		repoNotFound(w, r)
		return
	}
	kind, rev := "revision", "main"
	if len(seg) >= 4 {
		kind, rev = seg[2], seg[3]
	}
	sha, ok := repo.commit(rev)
	if !ok {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	files := h.files[repo.ID]
	switch kind {
	case "revision":
		siblings := []map[string]any{}
		for _, n := range repo.FileNames() {
			f := files[n]
			s := map[string]any{"rfilename": n}
			if r.URL.Query().Get("blobs") != "" {
				s["size"], s["blobId"] = f.size, f.blobID
				if f.lfsSHA != "" {
					s["lfs"] = map[string]any{"sha256": f.lfsSHA, "size": f.size, "pointerSize": 134}
				}
			}
			siblings = append(siblings, s)
		}
		var gated any = false
		if repo.Gated {
			gated = "manual"
		}
		json.NewEncoder(w).Encode(map[string]any{
			"_id": "0", "id": repo.ID, "modelId": repo.ID, "sha": sha, "private": false, "gated": gated,
			"disabled": false, "tags": []string{}, "siblings": siblings, "lastModified": "2026-01-01T00:00:00.000Z",
		})
	case "tree":
		entries := []map[string]any{}
		for _, n := range repo.FileNames() {
			f := files[n]
			e := map[string]any{"type": "file", "path": n, "size": f.size, "oid": f.blobID}
			if f.lfsSHA != "" {
				e["lfs"] = map[string]any{"oid": f.lfsSHA, "size": f.size, "pointerSize": 134}
			}
			entries = append(entries, e)
		}
		json.NewEncoder(w).Encode(entries)
	default:
		http.NotFound(w, r)
	}
}

func (h *FakeHub) serveResolve(w http.ResponseWriter, r *http.Request, id, rev, name string) {
	repo, ok := h.repos[id]
	if !ok {
		repoNotFound(w, r)
		return
	}
	if repo.Gated && !repo.granted(r) {
		if r.Header.Get("Authorization") == "" {
			hubError(w, http.StatusUnauthorized, "GatedRepo",
				"Access to model "+id+" is restricted. You must have access to it and be authenticated to access it. Please log in.")
		} else {
			hubError(w, http.StatusForbidden, "GatedRepo",
				"Access to model "+id+" is restricted and you are not in the authorized list. Visit "+h.srv.URL+"/"+id+" to ask for access.")
		}
		return
	}
	sha, ok := repo.commit(rev)
	if !ok {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	w.Header().Set("X-Repo-Commit", sha)
	f, ok := h.files[id][name]
	if !ok {
		hubError(w, http.StatusNotFound, "EntryNotFound", "Entry not found")
		return
	}
	if f.lfsSHA != "" {
		w.Header().Set("X-Linked-Etag", `"`+f.lfsSHA+`"`)
		w.Header().Set("X-Linked-Size", fmt.Sprint(f.size))
		w.Header().Set("ETag", `"`+f.blobID+`"`)
		w.Header().Set("Location", h.cdn.URL+"/"+f.lfsSHA)
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+f.blobID+`"`)
	h.serveFile(w, r, fileKey{id, name}, f)
}

// TinySafetensors writes a real safetensors file by hand: an 8-byte
// little-endian header length, a JSON header padded with spaces to a multiple
// of 8, then the tensor bytes. Each tensor is a 1-D float32 array.
func TinySafetensors(t testing.TB, tensors map[string][]float32) []byte {
	t.Helper()
	var names []string
	for n := range tensors {
		names = append(names, n)
	}
	slices.Sort(names)
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data bytes.Buffer
	for _, n := range names {
		begin := data.Len()
		for _, v := range tensors[n] {
			binary.Write(&data, binary.LittleEndian, math.Float32bits(v))
		}
		header[n] = map[string]any{"dtype": "F32", "shape": []int{len(tensors[n])}, "data_offsets": []int{begin, data.Len()}}
	}
	hj, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	var out bytes.Buffer
	binary.Write(&out, binary.LittleEndian, uint64(len(hj)))
	out.Write(hj)
	out.Write(data.Bytes())
	return out.Bytes()
}
