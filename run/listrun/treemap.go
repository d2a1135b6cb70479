package listrun

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"phase0/gate/verdict"
	"phase0/output/report"
	"phase0/output/scaffold"
	"phase0/read/hfcache"
	"phase0/read/llmstree"
	"phase0/read/modellist"
)

// TreeMap is a tree's own hf_models.txt judged as the tree's map (the list
// CI pre-seeds the offline runner's HF cache from): FAIL when a folder's
// verify_adapter.py, *_inference.py or *_weights.py uses a hub id the list
// lacks (the offline nightly cannot load it), each named with its files and
// lines; the listed ids no folder uses are a note (a bf16 reference a
// folder takes from elsewhere, an id kept for a workflow). docs/fleets.md.
type TreeMap struct {
	verdict.Section
	List     string       `json:"list"`
	Tree     string       `json:"tree"`
	Unlisted []UnlistedID `json:"unlisted"`
	Unused   []string     `json:"unused"`
	Used     int          `json:"used"` // distinct ids the folders use
	Listed   int          `json:"listed"`
}

// UnlistedID is one id the tree uses and its list lacks, with every use.
type UnlistedID struct {
	ID   string             `json:"id"`
	Uses []llmstree.Mention `json:"uses"`
}

// ListName is the file a tree keeps its map in.
const ListName = "hf_models.txt"

// JudgeMap judges the list of args that is the tree's own hf_models.txt:
// the tree is llmsDir, else the folder of an @FILE when that folder is an
// llms tree (`inspect @T/hf_models.txt`). Nil when no argument is the
// tree's map (a list of one's own, a list without a tree) or when the tree
// cannot be read (each row reports that). Sharded, the map is judged by
// shard 1 only, so that a CI matrix says it once.
func JudgeMap(llmsDir string, args []string, shard modellist.Shard) *TreeMap {
	if shard.N > 0 && shard.I != 1 {
		return nil
	}
	for _, arg := range args {
		file, ok := strings.CutPrefix(arg, "@")
		if !ok {
			continue
		}
		tree := llmsDir
		if tree == "" {
			tree = filepath.Dir(file)
			if llmstree.CheckTree(tree) != nil {
				continue
			}
		}
		if !sameFile(file, filepath.Join(tree, ListName)) {
			continue
		}
		entries, err := modellist.ReadFile(file)
		if err != nil {
			return nil
		}
		mentions, err := llmstree.Mentions(tree, scaffold.ReservedNames)
		if err != nil {
			return nil
		}
		return judgeMap(file, tree, entries, mentions)
	}
	return nil
}

func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

func judgeMap(file, tree string, entries []modellist.Entry, mentions []llmstree.Mention) *TreeMap {
	m := &TreeMap{Section: verdict.NewSection(), List: file, Tree: tree, Unlisted: []UnlistedID{}, Unused: []string{}}
	var listed []string
	for _, e := range entries {
		id, _, _ := strings.Cut(e.Arg, "@")
		if _, err := hfcache.ParseID(id); err == nil && strings.Count(id, "/") == 1 && !filepath.IsAbs(id) {
			listed = append(listed, id)
		}
	}
	m.Listed = len(listed)
	unlisted, unused := llmstree.MapFindings(mentions, listed)
	seen := map[string]bool{}
	for _, mn := range mentions {
		seen[strings.ToLower(mn.ID)] = true
	}
	m.Used = len(seen)
	for _, uses := range unlisted {
		m.Unlisted = append(m.Unlisted, UnlistedID{ID: uses[0].ID, Uses: uses})
		where := make([]string, len(uses))
		for i, u := range uses {
			where[i] = u.Where()
		}
		m.FailWith("%s uses %s, which %s does not list: an offline run (the nightly's HF cache is seeded from the list) cannot load it; add it to the list", strings.Join(where, ", "), uses[0].ID, ListName)
	}
	m.Unused = append(m.Unused, unused...)
	m.Summary = fmt.Sprintf("%s lists %d hub ids; the tree's folders use %d, all listed", ListName, m.Listed, m.Used)
	if len(m.Unlisted) > 0 {
		m.Summary = fmt.Sprintf("%s lacks %d of the %d hub ids the tree's folders use", ListName, len(m.Unlisted), m.Used)
	}
	if len(unused) > 0 {
		m.Find("note: %d listed hub id(s) no folder's verify_adapter.py, *_inference.py or *_weights.py uses: %s", len(unused), strings.Join(unused, " "))
	}
	return m
}

// Text is the map's verdict and findings, wrapped to the list's table width.
func (m *TreeMap) Text() string {
	var sb strings.Builder
	sb.WriteString(fmt.Sprintf("tree map (%s): %s: %s\n", ListName, m.Status, m.Summary))
	for _, f := range m.Findings {
		sb.WriteString(report.Wrap(f, "  ", "    "))
	}
	return sb.String()
}

// exitCode is the map's exit code: 1 when it failed, else 0.
func (m *TreeMap) exitCode() int {
	if m == nil {
		return 0
	}
	return m.Status.ExitCode()
}
