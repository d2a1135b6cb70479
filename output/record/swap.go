package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"phase0/internal/atomicfile"
	"phase0/internal/boundedfile"
	"phase0/output/report"
)

// The record folder is swapped in as one directory: the new record is
// written and synced into a temporary sibling folder (".<name>.tmp-N"),
// with every other file of the old folder hard-linked beside it, then the
// two names are exchanged in one step (atomicfile.Exchange). That exchange
// is the commit: before it the old record stands whole, after it the new
// one does; no kill in between can leave report.json from one run beside
// report.md from another. The workspace documents the record updates
// (TODO.md, progress.md …) live elsewhere: their temporaries are written
// before the exchange and named in a journal inside the new folder, which
// is rolled forward (renames only) right after the exchange, or by the next
// run into the same folder (Recover) when a kill came between. Recover also
// removes what a killed run left: staged folders beside the record and
// temporaries inside it. A record folder that holds folders of its own (a
// --report-dir of a person's) is never swapped: there the record is
// committed file by file, each file whole, as on a filesystem that cannot
// exchange two names.

// JournalName is the commit journal inside a record folder: present only
// between the exchange and the end of the roll-forward.
const JournalName = ".phase0-commit.json"

const journalFormat = "phase0-record-commit/1"

// journal is what is left to do once the new record folder is in place.
type journal struct {
	Format string `json:"format"`
	// Old is the sibling name the old record folder has after the exchange.
	Old string `json:"old"`
	// Renames are the workspace documents' temporaries, in order.
	Renames []atomicfile.Staged `json:"renames"`
}

// errNoLink: the filesystem refused a hard link (the record is then
// committed file by file).
var errNoLink = errors.New("cannot link the record folder's other files into the new one")

// errShared: the record folder holds folders of its own, which a swap
// would move, or no folder can be made beside it (the record is then
// committed file by file).
var errShared = errors.New("the record folder cannot be swapped as one")

// sweepTemps removes the temporaries of path a killed run left beside it.
func sweepTemps(path string) {
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*"))
	for _, m := range matches {
		if fi, err := os.Lstat(m); err == nil && fi.Mode().IsRegular() && atomicfile.IsTemp(filepath.Base(m)) {
			os.Remove(m)
		}
	}
}

// stopAt, when set (tests only), is called at each point of the commit:
// a test kills its process there.
var stopAt func(point string)

func reach(point string) {
	if stopAt != nil {
		stopAt(point)
	}
}

// recordNames are the files a record consists of: never carried from an
// old record into a new one (the new one has its own, or none).
func recordNames(inputs string) []string {
	return append(report.FileNames(), filepath.Base(inputs), JournalName)
}

// stage writes the journal, then the record's files into a new sibling
// folder of dir, with every other file of dir hard-linked beside them. A
// dir holding a folder is not swapped (errShared). On error nothing is left.
func stage(dir string, files map[string][]byte, inputs string, docs []atomicfile.Staged) (string, error) {
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	st, err := os.Stat(dir)
	if err != nil {
		return "", err
	}
	tmp, err := atomicfile.MkdirTemp(parent, "."+base+".tmp-*")
	if err != nil {
		// A folder whose parent takes no new entry (a --report-dir in a
		// read-only folder) is still written, file by file.
		return "", fmt.Errorf("%w: %w", errShared, err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	// The journal first: a staged folder a kill leaves names the documents'
	// temporaries, which Recover then removes with it.
	j := journal{Format: journalFormat, Old: filepath.Base(tmp), Renames: docs}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	skip := recordNames(inputs)
	var link []string
	for _, e := range entries {
		switch n := e.Name(); {
		case slices.Contains(skip, n) || atomicfile.IsTemp(n):
			// the old record's own files and a killed run's temporaries go with the old folder
		case e.IsDir():
			// A folder of a person's (a --report-dir such as ".") is
			// never moved: the record is committed file by file there.
			return "", fmt.Errorf("%w: %s holds the folder %s", errShared, dir, n)
		default:
			link = append(link, n)
		}
	}
	data, err := json.Marshal(j)
	if err != nil {
		return "", err
	}
	if err := writeSynced(filepath.Join(tmp, JournalName), data, 0o644); err != nil {
		return "", err
	}
	for _, n := range link {
		if err := os.Link(filepath.Join(dir, n), filepath.Join(tmp, n)); err != nil {
			return "", fmt.Errorf("%w: %w", errNoLink, err)
		}
	}
	reach("linked")
	for _, name := range slices.Sorted(maps.Keys(files)) {
		perm := fs.FileMode(0o644)
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
			perm = fi.Mode().Perm()
		}
		if err := writeSynced(filepath.Join(tmp, name), files[name], perm); err != nil {
			return "", err
		}
	}
	if err := os.Chmod(tmp, st.Mode().Perm()); err != nil {
		return "", err
	}
	atomicfile.SyncDir(tmp)
	ok = true
	return tmp, nil
}

func writeSynced(path string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Recover finishes a record commit a kill interrupted after its exchange
// (the journal in dir: the documents' temporaries renamed into place), then removes what killed runs left:
// staged or old record folders beside dir and temporaries inside it. It
// runs under the workspace's lock, before anything sweeps the workspace's
// temporaries (some are the journal's). swept lists what it removed.
func Recover(dir string) (swept []string, err error) {
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	path := filepath.Join(dir, JournalName)
	b, err := boundedfile.Read(path, 16<<20)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("reading the record's commit journal: %w", err)
	default:
		var j journal
		if err := json.Unmarshal(b, &j); err != nil || j.Format != journalFormat || !strings.HasPrefix(j.Old, "."+base+".tmp-") || strings.ContainsRune(j.Old, filepath.Separator) {
			return nil, fmt.Errorf("%s is not a record commit journal phase0 wrote (%v); remove it", path, err)
		}
		if err := rollForward(dir, filepath.Join(parent, j.Old), j); err != nil {
			return nil, err
		}
	}
	entries, err := os.ReadDir(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no record yet
	}
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, e := range entries {
		if n := e.Name(); e.IsDir() && strings.HasPrefix(n, "."+base+".tmp-") && atomicfile.IsTemp(n) {
			p := filepath.Join(parent, n)
			if b, err := boundedfile.Read(filepath.Join(p, JournalName), 16<<20); err == nil {
				var j journal
				if json.Unmarshal(b, &j) == nil && j.Format == journalFormat {
					for _, r := range j.Renames { // never committed: its documents' temporaries go too
						if atomicfile.IsTemp(filepath.Base(r.Tmp)) && filepath.Dir(r.Tmp) == filepath.Dir(r.Path) {
							os.Remove(r.Tmp)
						}
					}
				}
			}
			if err := os.RemoveAll(p); err != nil {
				errs = append(errs, err)
				continue
			}
			swept = append(swept, p)
		}
	}
	inside, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, e := range inside {
		if e.Type().IsRegular() && atomicfile.IsTemp(e.Name()) {
			p := filepath.Join(dir, e.Name())
			if err := os.Remove(p); err != nil {
				errs = append(errs, err)
				continue
			}
			swept = append(swept, p)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return swept, fmt.Errorf("removing what a killed record left: %w", err)
	}
	return swept, nil
}

// rollForward does what the journal says is left, then removes it: each
// step is idempotent, so a kill during it is finished by the next Recover.
func rollForward(dir, old string, j journal) error {
	dirs := map[string]bool{dir: true}
	for _, r := range j.Renames {
		if !atomicfile.IsTemp(filepath.Base(r.Tmp)) || filepath.Dir(r.Tmp) != filepath.Dir(r.Path) {
			return fmt.Errorf("record commit journal in %s names %s for %s, not its temporary", dir, r.Tmp, r.Path)
		}
		if _, err := os.Lstat(r.Tmp); err != nil {
			continue // renamed already
		}
		if err := os.Rename(r.Tmp, r.Path); err != nil {
			return fmt.Errorf("completing the record: %w", err)
		}
		dirs[filepath.Dir(r.Path)] = true
		reach("renamed")
	}
	for d := range dirs {
		atomicfile.SyncDir(d)
	}
	if err := os.Remove(filepath.Join(dir, JournalName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("completing the record: %w", err)
	}
	atomicfile.SyncDir(dir)
	reach("journal removed")
	return nil
}
