// Package record writes a run's record as one commit. report.json,
// report.md and the chart, Phase 0's section of phase_timing.md, the
// progress entry (on PASS), the TODO tick and the manifest that owns those
// documents are all rendered, then written and synced: the record's files
// into a new folder beside the record folder, the documents to temporaries
// beside their paths. A folder that refuses a file or a disk that fills
// fails there: the previous record stays whole and the run is "could not
// evaluate" (exit 2). The new folder then takes the record folder's place
// in one exchange (swap.go), the commit: a kill at any point leaves either
// the old record whole or the new one whole, and the documents' renames a
// kill cut short are finished by the next run into the folder (Recover),
// which also removes what the killed run left. The old inputs.json goes
// with the old folder. The new one stamps the workspace as the commit left
// it (sizes, times, inodes cannot be known before), so it is written right
// after. Any failure after the exchange marks report.json ERROR and leaves
// no inputs.json: a PASS report never stands beside an exit 2, nor is an
// incomplete one reused.
package record

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"phase0/gate/verdict"
	"phase0/internal/atomicfile"
	"phase0/internal/errmark"
	"phase0/output/report"
	"phase0/output/scaffold"
)

// ownHead is how much of a file in a record folder is read to tell
// whether phase0 wrote it.
const ownHead = 64 << 10

// ownMarks say, for each file a record writes into its folder, what the
// first bytes of every one phase0 writes hold; inputs.json's are the
// stamps' (run/reuse): its format first, then report_sha256.
var ownMarks = map[string]func(head string) bool{
	"report.json": func(h string) bool { return strings.Contains(h, `"tool": "phase0"`) },
	"report.md":   func(h string) bool { return strings.Contains(h, "# Phase 0 report") },
}

func ownInputs(h string) bool {
	return strings.HasPrefix(h, "{\n  \"format\": ") && strings.Contains(h, `"report_sha256": "`)
}

func ownChart(h string) bool { return strings.Contains(h, report.ChartMark) }

// foreignFile says which file of the record in dir (report.json,
// report.md, the charts, inputs.json) phase0 did not write: a file, an
// empty one too, without the mark phase0's own carry (ownMarks). It is
// never overwritten, in neither way of committing (a --report-dir pointed
// at a folder of a person's). A chart written before charts carried
// report.ChartMark is phase0's when the report.json beside it is.
func foreignFile(dir, inputs string) error {
	heads := map[string]string{}
	paths := map[string]string{}
	for _, name := range report.FileNames() {
		paths[name] = filepath.Join(dir, name)
	}
	paths[filepath.Base(inputs)] = inputs
	for name, path := range paths {
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return err
		}
		head := make([]byte, ownHead)
		n, err := io.ReadFull(f, head)
		f.Close()
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		heads[name] = string(head[:n])
	}
	own := func(name string) bool {
		h, ok := heads[name]
		switch {
		case !ok:
			return true
		case name == filepath.Base(inputs):
			return ownInputs(h)
		case ownMarks[name] != nil:
			return ownMarks[name](h)
		}
		_, report := heads["report.json"]
		return ownChart(h) || (report && ownMarks["report.json"](heads["report.json"]))
	}
	for _, name := range slices.Sorted(maps.Keys(heads)) {
		if !own(name) {
			return fmt.Errorf("%s exists and phase0 did not write it: it is never overwritten; give another --report-dir, or move the file", paths[name])
		}
	}
	return nil
}

// Paths of the documents the record updates, relative to the workspace.
var (
	TODODoc     = "TODO.md"
	ProgressDoc = filepath.Join("docs", "development_progress", "progress.md")
	TimingDoc   = filepath.Join("docs", "development_progress", scaffold.PhaseTimingName)
)

// Commit writes report r into dir with the workspace documents docs, as one
// commit (see the package comment), then inputs.json at inputs from
// encode, given the files just committed (nil encode: no inputs.json, the
// old one removed).
func Commit(r *report.Report, dir string, docs []report.File, inputs string, encode func([]report.File) ([]byte, error)) error {
	if err := commit(r, dir, docs, inputs, encode); err != nil {
		return errmark.Wrap(ErrRecord, err)
	}
	return nil
}

// ErrRecord is in the chain of every error Commit and Docs return
// (errors.Is): the record could not be written, which says nothing about
// the model.
var ErrRecord = errors.New("the record could not be written")

func commit(r *report.Report, dir string, docs []report.File, inputs string, encode func([]report.File) ([]byte, error)) error {
	files, err := report.Files(r, dir)
	if err != nil {
		return fmt.Errorf("recording the result (nothing was written): %w", err)
	}
	if err := foreignFile(dir, inputs); err != nil {
		return fmt.Errorf("recording the result (nothing was written): %w", err)
	}
	files = append(files, docs...)
	// Every file must be writable before the first is staged: a clear
	// message for a read-only or immutable file, a folder in a file's place.
	for _, p := range append(paths(files), inputs) {
		if err := atomicfile.CheckWritable(p); err != nil {
			return fmt.Errorf("recording the result (nothing was written): %w", err)
		}
	}
	// The folder itself is exchanged, not a symlink to it.
	real := dir
	if p, err := filepath.EvalSymlinks(dir); err == nil {
		real = p
	}
	// A commit a kill interrupted is finished first; then what killed runs
	// left beside and inside the record folder, and beside the documents,
	// is removed (the workspace's lock is held: none is a live run's).
	if _, err := Recover(real); err != nil {
		return fmt.Errorf("recording the result (nothing was written): %w", err)
	}
	own, docsBatch, err := split(files, dir, inputs)
	if err != nil {
		return fmt.Errorf("recording the result (nothing was written): %w", err)
	}
	fail := func(err error) error {
		// Committed, but not completed or without its inputs: the report
		// must not stand as a complete PASS beside an exit 2, nor be
		// reused. Marking it is best effort; the error stands.
		r.Status, r.Error, r.ErrorKind = verdict.Error, "the record is incomplete: "+err.Error(), report.ErrorRecord
		_ = report.Write(r, dir)
		_ = os.Remove(inputs)
		return fmt.Errorf("recording the result: %w", err)
	}
	dir = real
	staged, err := stage(dir, own, inputs, docsBatch.Staged())
	if err == nil {
		reach("staged")
		if err = atomicfile.Exchange(staged, dir); err != nil {
			os.RemoveAll(staged)
		}
	}
	if err != nil {
		if !errors.Is(err, atomicfile.ErrNoExchange) && !errors.Is(err, errNoLink) && !errors.Is(err, errShared) {
			docsBatch.Abort()
			return fmt.Errorf("recording the result (nothing was written): %w", err)
		}
		if staged, err := fileByFile(docsBatch, dir, own, inputs); err != nil && !staged {
			return fmt.Errorf("recording the result (nothing was written): %w", err)
		} else if err != nil {
			return fail(err)
		}
	} else {
		// The commit: from here the new record stands; the journal in it
		// owns the documents' temporaries.
		docsBatch.Release()
		atomicfile.SyncDir(filepath.Dir(dir))
		reach("exchanged")
		if _, err := Recover(dir); err != nil {
			return fail(err)
		}
	}
	reach("committed")
	if encode != nil {
		data, err := encode(files)
		if err == nil {
			err = atomicfile.Write(inputs, data)
		}
		if err != nil {
			return fail(err)
		}
	}
	return nil
}

// fileByFile commits the record where its folder cannot be exchanged (a
// filesystem that cannot swap two names or link, or a folder shared with a
// person's folders): file by file, each file whole, with the documents,
// the old inputs.json removed with them. staged says whether the error
// came after every file was staged (nothing is written before).
func fileByFile(docs *atomicfile.Batch, dir string, own map[string][]byte, inputs string) (staged bool, err error) {
	for name, data := range own {
		if err := docs.Add(filepath.Join(dir, name), data); err != nil {
			return false, err
		}
	}
	docs.Remove(inputs)
	return true, docs.Commit()
}

// split sorts the files into the record folder's own (report files by
// name, staged in the folder that is swapped in) and the documents beside
// it (a batch of temporaries beside their paths, stray temporaries of a
// killed run swept first).
func split(files []report.File, dir, inputs string) (map[string][]byte, *atomicfile.Batch, error) {
	own := map[string][]byte{}
	docsBatch := &atomicfile.Batch{}
	for _, f := range files {
		if filepath.Dir(f.Path) == dir && slices.Contains(recordNames(inputs), filepath.Base(f.Path)) {
			own[filepath.Base(f.Path)] = f.Data
			continue
		}
		sweepTemps(f.Path)
		if err := docsBatch.Add(f.Path, f.Data); err != nil {
			return nil, nil, err
		}
	}
	return own, docsBatch, nil
}

func paths(files []report.File) []string {
	out := make([]string, 0, len(files)+1)
	for _, f := range files {
		out = append(out, f.Path)
	}
	return out
}

// Docs renders the workspace documents the record updates: in phase0's own
// workspace (own) Phase 0's timing section, the progress entry on PASS, the
// TODO status and the manifest that owns them; in a folder phase0 did not
// create, the entry and the tick the record enters (r.Workspace.Entered),
// or nothing. entry is the progress entry (read only on PASS); blockers
// are TODO's and the timing section's.
func Docs(r *report.Report, ws string, own, passed bool, entry func() string, blockers []string) ([]report.File, error) {
	out, err := renderDocs(r, ws, own, passed, entry, blockers)
	if err != nil {
		return nil, errmark.Wrap(ErrRecord, err)
	}
	return out, nil
}

func renderDocs(r *report.Report, ws string, own, passed bool, entry func() string, blockers []string) ([]report.File, error) {
	if !own && len(r.Workspace.Entered) == 0 {
		return nil, nil
	}
	var out []report.File
	owned := map[string][]byte{}
	put := func(rel, text string) {
		out = append(out, report.File{Path: filepath.Join(ws, rel), Data: []byte(text)})
		owned[filepath.ToSlash(rel)] = []byte(text)
	}
	update := func(rel, entry string) error {
		p := filepath.Join(ws, rel)
		text, err := scaffold.ReadDoc(p)
		if err == nil {
			text, err = scaffold.Phase0Entry(text, p, entry)
		}
		if err != nil {
			return err
		}
		put(rel, text)
		return nil
	}
	if own {
		if err := update(TimingDoc, scaffold.Phase0Timing(r.Started, time.Now(), string(r.Status), blockers)); err != nil {
			return nil, err
		}
	}
	if passed {
		if err := update(ProgressDoc, entry()); err != nil {
			return nil, err
		}
	}
	todo := filepath.Join(ws, TODODoc)
	text, err := scaffold.ReadDoc(todo)
	if err == nil {
		text, err = scaffold.Phase0Status(text, todo, passed, blockers, scaffold.WrittenByPhase0(todo, []byte(text)))
	}
	if err != nil {
		return nil, err
	}
	put(TODODoc, text)
	if own {
		m, err := scaffold.ManifestAfter(ws, owned)
		if err != nil {
			return nil, err
		}
		out = append(out, report.File{Path: filepath.Join(ws, scaffold.ManifestName), Data: m})
	}
	return out, nil
}

// Enter brings a folder's Phase 0 entry (progress.md) and TODO tick up to
// date for a reused PASS, in one commit, and nothing else; changed lists
// the documents it rewrote (none when they were up to date).
func Enter(ws, entry string) (changed []string, err error) {
	var b atomicfile.Batch
	for _, d := range []struct {
		rel    string
		update func(text, path string) (string, error)
	}{
		{ProgressDoc, func(text, path string) (string, error) { return scaffold.Phase0Entry(text, path, entry) }},
		{TODODoc, func(text, path string) (string, error) { return scaffold.Phase0Status(text, path, true, nil, false) }},
	} {
		p := filepath.Join(ws, d.rel)
		text, err := scaffold.ReadDoc(p)
		if err != nil {
			b.Abort()
			return nil, fmt.Errorf("entering the reused PASS in %s: %w", ws, err)
		}
		updated, err := d.update(text, p)
		if err == nil && updated != text {
			err = b.Add(p, []byte(updated))
			changed = append(changed, d.rel)
		}
		if err != nil {
			b.Abort()
			return nil, fmt.Errorf("entering the reused PASS in %s (nothing was written): %w", ws, err)
		}
	}
	if len(changed) == 0 {
		return nil, nil
	}
	if err := b.Commit(); err != nil {
		return nil, fmt.Errorf("entering the reused PASS in %s: %w", ws, err)
	}
	return changed, nil
}

// WithoutLocalPaths rewrites the blockers that go into TODO.md and
// phase_timing.md (files meant to be committed) so that they name the
// checkpoint, the workspace and the llms folder instead of their absolute
// paths, which error messages from the loader and the runner carry;
// checkpoint or ws "" when there is none.
func WithoutLocalPaths(lines []string, checkpoint, ws string) []string {
	names := map[string]string{}
	if checkpoint != "" {
		names[checkpoint] = "<checkpoint>"
	}
	if ws != "" {
		names[ws] = "<workspace>"
		names[filepath.Dir(ws)] = "<llms>"
	}
	paths := make([]string, 0, len(names))
	for p := range names {
		if filepath.IsAbs(p) && p != "/" {
			paths = append(paths, p)
		}
	}
	// Longest first: the workspace lies inside the llms folder.
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	out := make([]string, len(lines))
	for i, l := range lines {
		for _, p := range paths {
			l = strings.ReplaceAll(l, p, names[p])
		}
		out[i] = l
	}
	return out
}
