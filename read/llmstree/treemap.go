package llmstree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"phase0/internal/boundedfile"
)

// The tree's map: hf_models.txt is the list of hub ids the tree's folders
// load, which CI pre-seeds into the offline runner's HF cache. An id a
// folder uses that the list lacks is not in that cache, and the offline
// nightly cannot load it (upstream's #1963). Mentions reads, statically,
// every hub id the folders' code uses; docs/fleets.md says how a list
// judges them.

// maxMapFiles bounds the *_inference.py and the *_weights.py files read per
// folder for the map (each, like maxNamingFiles).
const maxMapFiles = 16

// Mention is one hub id a folder's code uses: the folder, the file
// (relative to the folder) and the 1-based line where it first appears.
type Mention struct {
	ID     string `json:"id"`
	Folder string `json:"folder"`
	File   string `json:"file"`
	Line   int    `json:"line"`
}

// Where is the mention as folder/file:line.
func (m Mention) Where() string { return fmt.Sprintf("%s/%s:%d", m.Folder, m.File, m.Line) }

// mapFiles are the files of a folder whose hub ids the map reads:
// verify_adapter.py, then its *_inference.py and *_weights.py files, sorted,
// at most maxMapFiles of each.
func mapFiles(dir string) ([]string, error) {
	files := []string{AdapterFile}
	for _, pattern := range []string{"*_inference.py", "*_weights.py"} {
		found, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", dir, err)
		}
		slices.Sort(found)
		for _, p := range found[:min(len(found), maxMapFiles)] {
			files = append(files, filepath.Base(p))
		}
	}
	return files, nil
}

// Mentions reads every hub id the tree at llms uses in its folders'
// verify_adapter.py, *_inference.py and *_weights.py, in folder and file
// order, each id once per file. Hidden folders and those in skip are not
// read. A literal shaped like an id that is not a model's is left out:
// one on a line that speaks of a dataset (lerobot/droid_100 as
// `--dataset`'s default), a path (the folder or the tree holds it, or it
// starts with one of the tree's folders), a file name (`fused_decode/q4_0_codec.py`),
// a MIME type (`application/json`).
func Mentions(llms string, skip []string) ([]Mention, error) {
	entries, names, err := folders(llms, skip)
	if err != nil {
		return nil, err
	}
	top := map[string]bool{}
	for _, e := range entries {
		top[strings.ToLower(e.Name())] = true
	}
	var out []Mention
	for _, name := range names {
		dir := filepath.Join(llms, name)
		files, err := mapFiles(dir)
		if err != nil {
			return nil, err
		}
		for _, rel := range files {
			b, err := boundedfile.Read(filepath.Join(dir, rel), maxFileBytes)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, rel), err)
			}
			keep := func(id string, line []byte) bool { return modelID(id, line, top, llms, dir) }
			for _, at := range hubIDsAt(b, keep) {
				out = append(out, Mention{ID: at.ID, Folder: name, File: rel, Line: at.Line})
			}
		}
	}
	return out, nil
}

var (
	// datasetLine is a line that speaks of a dataset: DEFAULT_DATASET =,
	// --dataset, load_dataset(, repo_type="dataset".
	datasetLine = regexp.MustCompile(`(?i)dataset`)
	// fileName is a name that ends in a file's extension, not a model's
	// (Qwen2.5-3B's ".5-3B" is none).
	fileName = regexp.MustCompile(`(?i)\.(py|pyc|so|o|a|c|cc|cpp|h|hpp|mlir|xclbin|elf|bin|txt|json|jsonl|md|yaml|yml|toml|cfg|ini|lit|sh|mk|csv|log|png|jpg|npy|npz|pt|pth|safetensors|q4nx|gguf|model|jinja|tar|gz|zip|tmp)$`)
)

// notOrgs are first parts of an "a/b" literal that are no hub
// organisation the tree loads from: MIME types and folder names of the
// tree's code.
var notOrgs = map[string]bool{
	"application": true, "text": true, "image": true, "audio": true, "video": true, "multipart": true,
	"build": true, "verify": true, "runners": true, "prompts": true, "shared": true, "weights": true, "tmp": true,
	"docs": true, "scripts": true, "tests": true, "data": true, "kernels": true, "programming_examples": true,
	"results": true, "out": true, "output": true, "logs": true, "cache": true, "fused_decode": true,
}

// modelID says whether id, a literal of the folder dir on line, names a
// model the folder loads rather than a path, a file, a MIME type or a
// dataset. top holds the tree's own entries, lower-cased.
func modelID(id string, line []byte, top map[string]bool, llms, dir string) bool {
	org, name, _ := strings.Cut(id, "/")
	if notOrgs[strings.ToLower(org)] || top[strings.ToLower(org)] || fileName.MatchString(name) || datasetLine.Match(line) {
		return false
	}
	for _, base := range []string{dir, llms} {
		if _, err := os.Lstat(filepath.Join(base, filepath.FromSlash(id))); err == nil {
			return false
		}
	}
	return true
}

// MapFindings compares the ids the tree's folders use with the ids a list
// names (case-insensitively, as the Hub resolves them): the mentions of each
// id the list lacks, grouped by id in order of first mention, and the ids
// the list names that no folder uses, in list order.
func MapFindings(mentions []Mention, listed []string) (unlisted [][]Mention, unused []string) {
	in := func(ids []string, id string) bool {
		return slices.ContainsFunc(ids, func(s string) bool { return strings.EqualFold(s, id) })
	}
	var used []string
	for _, m := range mentions {
		used = append(used, m.ID)
		if in(listed, m.ID) {
			continue
		}
		i := slices.IndexFunc(unlisted, func(g []Mention) bool { return strings.EqualFold(g[0].ID, m.ID) })
		if i < 0 {
			unlisted = append(unlisted, nil)
			i = len(unlisted) - 1
		}
		unlisted[i] = append(unlisted[i], m)
	}
	for _, id := range listed {
		if !in(used, id) && !in(unused, id) {
			unused = append(unused, id)
		}
	}
	return unlisted, unused
}
