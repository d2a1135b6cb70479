package hfcache

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeHub answers the Hub endpoints huggingface_hub 1.x calls for
// model_info, snapshot_download and hf_hub_download:
//
//	GET  /api/models/{repo}[/revision/{rev}]   repo info (siblings, sha)
//	GET  /api/models/{repo}/tree/{rev}         file listing
//	HEAD|GET /{repo}/resolve/{rev}/{file}      file metadata and bytes
//	GET  {cdn}/{sha256}                        LFS bytes after the redirect
//
// Regular files are served directly with their git blob sha1 as ETag; LFS
// files (*.safetensors) answer with a 302 to a second server carrying X-Linked-Etag and
// X-Linked-Size, as the real Hub does. Errors carry X-Error-Code.
type fakeHub struct {
	repos map[string]*fakeRepo
	srv   *httptest.Server
	cdn   *httptest.Server // another origin, as the real LFS/CDN host is
}

type fakeRepo struct {
	id    string
	refs  map[string]string // branch -> commit sha
	files map[string][]byte // at every commit
}

type fakeFile struct {
	name   string
	data   []byte
	blobID string // git sha1 of the blob (or of the LFS pointer on the real Hub)
	lfsSHA string // sha256 for LFS files
}

func newFakeHub(t *testing.T, repos ...*fakeRepo) *fakeHub {
	t.Helper()
	h := &fakeHub{repos: map[string]*fakeRepo{}}
	for _, r := range repos {
		h.repos[r.id] = r
	}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	t.Cleanup(h.cdn.Close)
	return h
}

func (r *fakeRepo) file(name string) (fakeFile, bool) {
	data, ok := r.files[name]
	if !ok {
		return fakeFile{}, false
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	f := fakeFile{name: name, data: data, blobID: hex.EncodeToString(h.Sum(nil))}
	if strings.HasSuffix(name, ".safetensors") {
		sum := sha256.Sum256(data)
		f.lfsSHA = hex.EncodeToString(sum[:])
	}
	return f, true
}

func (r *fakeRepo) names() []string {
	var names []string
	for n := range r.files {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// commit maps a revision to a commit sha: a branch, or a sha itself.
func (r *fakeRepo) commit(rev string) (string, bool) {
	if sha, ok := r.refs[rev]; ok {
		return sha, true
	}
	for _, sha := range r.refs {
		if sha == rev {
			return sha, true
		}
	}
	return "", false
}

func hubError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("X-Error-Code", code)
	w.Header().Set("X-Error-Message", msg)
	http.Error(w, msg, status)
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

func (h *fakeHub) serve(w http.ResponseWriter, r *http.Request) {
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

func (h *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	sha := strings.TrimPrefix(r.URL.Path, "/")
	for _, repo := range h.repos {
		for _, n := range repo.names() {
			if f, _ := repo.file(n); f.lfsSHA == sha {
				http.ServeContent(w, r, n, time.Time{}, bytes.NewReader(f.data))
				return
			}
		}
	}
	http.NotFound(w, r)
}

func (h *fakeHub) serveAPI(w http.ResponseWriter, r *http.Request, seg []string) {
	repo, ok := h.repos[seg[0]+"/"+seg[1]]
	if !ok {
		hubError(w, http.StatusUnauthorized, "RepoNotFound", "Repository not found")
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
		for _, n := range repo.names() {
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
		json.NewEncoder(w).Encode(map[string]any{
			"_id": "0", "id": repo.id, "modelId": repo.id, "sha": sha, "private": false, "gated": false,
			"disabled": false, "tags": []string{}, "siblings": siblings, "lastModified": "2026-01-01T00:00:00.000Z",
		})
	case "tree":
		entries := []map[string]any{}
		for _, n := range repo.names() {
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

func (h *fakeHub) serveResolve(w http.ResponseWriter, r *http.Request, id, rev, name string) {
	repo, ok := h.repos[id]
	if !ok {
		hubError(w, http.StatusUnauthorized, "RepoNotFound", "Repository not found")
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

// tinySafetensors writes a real safetensors file by hand: an 8-byte
// little-endian header length, a JSON header padded with spaces to a multiple
// of 8, then the tensor bytes. Each tensor is a 1-D float32 array.
func tinySafetensors(t *testing.T, tensors map[string][]float32) []byte {
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
