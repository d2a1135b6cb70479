package testenv

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
// X-Linked-Etag and X-Linked-Size, as the real Hub does.
//
// Errors carry X-Error-Code and X-Error-Message the way the Hub sends them,
// so huggingface_hub raises its own typed errors: an unknown repository is
// RepoNotFound (401 without a token, 404 with one), an unknown revision
// RevisionNotFound (404), a missing file EntryNotFound (404), and the files
// of a gated repository GatedRepo (401 without a token, 403 with a token that
// was not granted access). Repositories must not change after NewFakeHub.
type FakeHub struct {
	repos map[string]*FakeRepo
	srv   *httptest.Server
	cdn   *httptest.Server // another origin, as the real LFS/CDN host is

	mu       sync.Mutex
	requests []string
}

// FakeRepo is one model repository: the same files at every commit.
type FakeRepo struct {
	ID    string
	Refs  map[string]string // branch or tag -> 40-hex commit sha
	Files map[string][]byte
	// Gated repositories list their files to anyone but serve them only to
	// a request carrying one of Tokens as its bearer token.
	Gated  bool
	Tokens []string
}

type fakeFile struct {
	data   []byte
	blobID string // git sha1 of the blob (or of the LFS pointer on the real Hub)
	lfsSHA string // sha256 for LFS files
}

// NewFakeHub starts the Hub and its CDN; both stop when the test ends.
func NewFakeHub(t testing.TB, repos ...*FakeRepo) *FakeHub {
	t.Helper()
	h := &FakeHub{repos: map[string]*FakeRepo{}}
	for _, r := range repos {
		h.repos[r.ID] = r
	}
	h.srv = httptest.NewServer(h.logged("", h.serve))
	t.Cleanup(h.srv.Close)
	h.cdn = httptest.NewServer(h.logged("cdn", h.serveCDN))
	t.Cleanup(h.cdn.Close)
	return h
}

// URL is the Hub's address, the value for HF_ENDPOINT.
func (h *FakeHub) URL() string { return h.srv.URL }

// Requests lists every request both servers received so far, in order, as
// "METHOD path" ("GET cdn/<sha256>" for the CDN).
func (h *FakeHub) Requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.requests)
}

func (h *FakeHub) logged(prefix string, serve http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.requests = append(h.requests, r.Method+" "+prefix+r.URL.EscapedPath())
		h.mu.Unlock()
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

// FileNames lists the repository's files, sorted.
func (r *FakeRepo) FileNames() []string {
	var names []string
	for n := range r.Files {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (r *FakeRepo) file(name string) (fakeFile, bool) {
	data, ok := r.Files[name]
	if !ok {
		return fakeFile{}, false
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	f := fakeFile{data: data, blobID: hex.EncodeToString(h.Sum(nil))}
	if strings.HasSuffix(name, ".safetensors") {
		sum := sha256.Sum256(data)
		f.lfsSHA = hex.EncodeToString(sum[:])
	}
	return f, true
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
	sha := strings.TrimPrefix(r.URL.Path, "/")
	for _, repo := range h.repos {
		for _, n := range repo.FileNames() {
			if f, _ := repo.file(n); f.lfsSHA == sha {
				http.ServeContent(w, r, n, time.Time{}, bytes.NewReader(f.data))
				return
			}
		}
	}
	http.NotFound(w, r)
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
	switch kind {
	case "revision":
		siblings := []map[string]any{}
		for _, n := range repo.FileNames() {
			f, _ := repo.file(n)
			s := map[string]any{"rfilename": n}
			if r.URL.Query().Get("blobs") != "" {
				s["size"], s["blobId"] = len(f.data), f.blobID
				if f.lfsSHA != "" {
					s["lfs"] = map[string]any{"sha256": f.lfsSHA, "size": len(f.data), "pointerSize": 134}
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
			f, _ := repo.file(n)
			e := map[string]any{"type": "file", "path": n, "size": len(f.data), "oid": f.blobID}
			if f.lfsSHA != "" {
				e["lfs"] = map[string]any{"oid": f.lfsSHA, "size": len(f.data), "pointerSize": 134}
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
	f, ok := repo.file(name)
	if !ok {
		hubError(w, http.StatusNotFound, "EntryNotFound", "Entry not found")
		return
	}
	if f.lfsSHA != "" {
		w.Header().Set("X-Linked-Etag", `"`+f.lfsSHA+`"`)
		w.Header().Set("X-Linked-Size", fmt.Sprint(len(f.data)))
		w.Header().Set("ETag", `"`+f.blobID+`"`)
		w.Header().Set("Location", h.cdn.URL+"/"+f.lfsSHA)
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+f.blobID+`"`)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.data))
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
