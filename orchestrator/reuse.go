package orchestrator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"phase0/internal/boundedfile"

	"phase0/hfcache"
	"phase0/internal/atomicfile"
	"phase0/scaffold"
	"phase0/verdict"
)

// A repeat `run` on unchanged inputs reuses the recorded verdict instead of
// starting Python (seconds of interpreter start, torch import and model
// load for an answer that cannot change). The inputs are everything the
// verdict depends on, stamped cheaply: the model's files by size, mtime,
// inode and hub blob name (never re-hashed), the generated files and the
// verify/ prompts and runner by content (they are small), the settings that
// change a verdict, phase0's version and binary, and the Python environment
// by its interpreter and installed distributions (read from site-packages,
// without starting Python). Only a PASS is reused: a FAIL may come from
// the machine (memory, a timeout, a crash) and is cheap to recompute anyway.

// inputsName is the file, next to report.json, that records the inputs of
// the verdict in report.json.
const inputsName = "inputs.json"

// inputsFormat changes when the stamps change meaning; an older record is
// then simply not reused.
const inputsFormat = 1

const (
	maxRecordFile = 64 << 20 // report.json and inputs.json
	maxHashedFile = 16 << 20 // generated files, prompts, runners
	maxListed     = 10000    // entries of one folder we stamp
)

// ReusedFrom names the recorded verdict a run reused (report.json) and when
// it was reached.
type ReusedFrom struct {
	Path     string    `json:"path"`
	Recorded time.Time `json:"recorded"`
}

// fileStamp identifies one file cheaply. Small files the verdict reads as
// text carry their sha256 (and no times: content is what matters); model
// files carry size, mtime, inode and, in the HF cache, the blob they link to.
type fileStamp struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	MTime  int64  `json:"mtime_ns,omitempty"`
	Inode  uint64 `json:"inode,omitempty"`
	Blob   string `json:"blob,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Absent bool   `json:"absent,omitempty"`
}

// runInputs is what a `run` verdict depends on.
type runInputs struct {
	Settings  settingsInputs `json:"settings"`
	Phase0    phase0Inputs   `json:"phase0"`
	Python    pythonInputs   `json:"python"`
	Model     modelInputs    `json:"model"`
	Verify    []fileStamp    `json:"verify"`
	Shim      []fileStamp    `json:"shim"`
	Generated []fileStamp    `json:"generated"`
}

// settingsInputs are the settings that can change a verdict or where it is
// recorded (not --fresh, workers or the progress display).
type settingsInputs struct {
	Command           string  `json:"command"`
	Model             string  `json:"model"`
	LLMSDir           string  `json:"llms_dir"`
	Name              string  `json:"name"`
	PromptStyle       string  `json:"prompt_style"`
	Prompt            string  `json:"prompt"`
	Decode            int     `json:"decode"`
	MaxSeq            int     `json:"max_seq"`
	Scan              bool    `json:"scan"`
	Force             bool    `json:"force"`
	MemoryCheck       bool    `json:"memory_check"`
	AttentionFallback bool    `json:"attention_fallback"`
	OutDir            string  `json:"out_dir"`
	MaxPerplexity     float64 `json:"max_perplexity_ratio"`
	ReferenceSteps    int     `json:"reference_steps"`
	Timeout           string  `json:"timeout"`
	ReportDir         string  `json:"report_dir"`
	CacheDir          string  `json:"cache"`
	PyShimDir         string  `json:"pyshim"`
}

type phase0Inputs struct {
	Version    string    `json:"version"`
	Executable fileStamp `json:"executable"`
}

// pythonInputs stamp the interpreter and what is installed next to it.
type pythonInputs struct {
	Executable   string    `json:"executable"`
	Interpreter  fileStamp `json:"interpreter"`
	PyvenvCfg    fileStamp `json:"pyvenv_cfg"`
	SitePackages []string  `json:"site_packages"`
	Dists        []string  `json:"dists"` // *.dist-info / *.egg-info names: name and version of every package
	Torch        string    `json:"torch"`
	Transformers string    `json:"transformers"`
}

type modelInputs struct {
	Dir         string      `json:"dir"`
	ID          string      `json:"id"`
	Revision    string      `json:"revision,omitempty"`
	PromptStyle string      `json:"prompt_style,omitempty"`
	Files       []fileStamp `json:"files"`
}

// inputsRecord is inputs.json.
type inputsRecord struct {
	Format       int       `json:"format"`
	Recorded     time.Time `json:"recorded"`
	Report       string    `json:"report"`
	ReportSHA256 string    `json:"report_sha256"`
	Inputs       runInputs `json:"inputs"`
}

// reuseStage reuses the recorded verdict when none of its inputs changed;
// otherwise it says why not (SKIPPED) and the chain runs in full. It never
// fails a run.
func reuseStage(_ context.Context, st *state) (verdict.Status, string, error) {
	rec, why := st.reusable()
	if why != "" {
		return verdict.Skip, why + "; running everything", nil
	}
	st.reused = rec
	return verdict.Pass, fmt.Sprintf("inputs unchanged since %s: reusing %s", rec.ReusedFrom.Recorded.Format(time.RFC3339), rec.ReusedFrom.Path), nil
}

// reusable returns the recorded report when it can be reused, else why not.
// Whatever it stamps is kept in st.inputs, to be compared at the end of a
// full run; under --fresh it only stamps.
func (st *state) reusable() (*Report, string) {
	ref, why := reuseModel(st.s, st.arg)
	if why != "" {
		return nil, why
	}
	ws, err := workspaceDir(st.s, ref.ID)
	if err != nil {
		return nil, err.Error()
	}
	reports, err := reportDirFor(st.s, ws)
	if err != nil {
		return nil, err.Error()
	}
	// Stamp what can be stamped before anything else, so that even a first
	// run can tell, when it records, whether the model changed under it.
	stamp := func() (string, bool) {
		cur, err := st.currentInputs(ref, ws)
		if err != nil {
			return err.Error(), false
		}
		st.inputs = cur
		return "", true
	}
	if ref.Dir != "" {
		if why, ok := stamp(); !ok {
			return nil, why
		}
	}
	if st.s.Fresh {
		return nil, "--fresh"
	}
	if st.s.Refresh {
		return nil, "--refresh (the reference is recorded anew)"
	}
	var rec inputsRecord
	if err := readJSONFile(filepath.Join(reports, inputsName), &rec); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "no recorded verdict in " + reports
		}
		return nil, "the recorded inputs are unreadable: " + err.Error()
	}
	if ref.Dir == "" { // the default model: its folder and stamp are phase0's own conversion
		ref.Dir, ref.Revision = rec.Inputs.Model.Dir, rec.Inputs.Model.Revision
		if why, ok := stamp(); !ok {
			return nil, why
		}
	}
	if rec.Format != inputsFormat {
		return nil, fmt.Sprintf("the recorded inputs are format %d, this phase0 writes %d", rec.Format, inputsFormat)
	}
	if why := inputsChange(&rec.Inputs, st.inputs); why != "" {
		return nil, why
	}
	data, err := boundedfile.Read(rec.Report, maxRecordFile)
	if err != nil {
		return nil, "the recorded report is unreadable: " + err.Error()
	}
	if sha256Hex(data) != rec.ReportSHA256 {
		return nil, rec.Report + " changed since it was recorded"
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Sprintf("%s is not a phase0 report: %v", rec.Report, err)
	}
	if r.Status != verdict.Pass {
		return nil, fmt.Sprintf("the recorded verdict is %s; only a PASS is reused", r.Status)
	}
	r.ReusedFrom = &ReusedFrom{Path: rec.Report, Recorded: rec.Recorded}
	return &r, ""
}

// reuseModel finds the model's id, and its folder, without Python and
// without the network: a local folder, a hub id complete in the HF cache,
// or the default model (Dir "" = the recorded conversion). why says when the
// argument cannot be resolved that way; the full run then resolves it.
func reuseModel(s *Settings, arg string) (*resolvedModel, string) {
	if arg == DefaultModel {
		if _, err := os.Stat(arg); err == nil {
			return nil, "MODEL default is ambiguous here"
		}
		return &resolvedModel{ID: defaultModelID, PromptStyle: defaultPromptStyle}, ""
	}
	if fi, err := os.Stat(arg); err == nil {
		if !fi.IsDir() {
			return nil, arg + " is not a folder"
		}
		abs, err := filepath.Abs(arg)
		if err != nil {
			return nil, err.Error()
		}
		return &resolvedModel{Dir: abs, ID: abs}, ""
	}
	ref, err := hfcache.ParseID(arg)
	if err != nil {
		return nil, "no such folder or hub id " + arg
	}
	res, err := hfcache.Resolve(hfcache.CacheDir(s.getenv), ref)
	if err != nil || !res.Complete() {
		return nil, ref.ID + " is not complete in the HF cache"
	}
	return &resolvedModel{Dir: res.Dir, Revision: res.Revision, ID: ref.ID}, ""
}

// recordInputsStage writes inputs.json for a PASS just recorded, so the next
// run with the same inputs can reuse it; for any other verdict it removes a
// stale one. Inputs that changed while the run read them are not recorded.
func recordInputsStage(_ context.Context, st *state) (verdict.Status, string, error) {
	reports, err := reportDirFor(st.s, st.wsDir)
	if err != nil {
		return "", "", err
	}
	path := filepath.Join(reports, inputsName)
	forget := func(why string) (verdict.Status, string, error) {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", "", fmt.Errorf("removing the stale %s: %w", path, err)
		}
		return verdict.Skip, why + "; the next run runs everything", nil
	}
	if status := st.status(); status != verdict.Pass {
		return forget(fmt.Sprintf("verdict %s is not reused", status))
	}
	// A PASS whose reference could not be recorded must not be reused: the
	// next run would skip the recording the later phases need.
	if r := st.reference; r != nil && r.Status != verdict.Pass {
		return forget("the reference was not recorded")
	}
	cur, err := st.currentInputs(st.ref, st.wsDir)
	if err != nil {
		return forget(err.Error())
	}
	if before := st.inputs; before != nil && before.Model.Dir == cur.Model.Dir {
		before.Generated = cur.Generated // the run itself writes them
		if why := inputsChange(before, cur); why != "" {
			return forget(why + " during the run")
		}
	}
	report := filepath.Join(reports, "report.json")
	data, err := boundedfile.Read(report, maxRecordFile)
	if err != nil {
		return forget("the report just written is unreadable: " + err.Error())
	}
	rec := inputsRecord{Format: inputsFormat, Recorded: st.started, Report: report, ReportSHA256: sha256Hex(data), Inputs: *cur}
	js, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return "", "", err
	}
	if err := atomicfile.Write(path, append(js, '\n')); err != nil {
		return "", "", fmt.Errorf("recording the inputs: %w", err)
	}
	return verdict.Pass, path, nil
}

// reusedReport is the recorded report, marked as reused, with this run's
// stages and timing.
func (st *state) reusedReport() *Report {
	r := *st.reused
	r.Stages = append([]Stage{}, st.stages...)
	r.Started = st.started
	r.Seconds = time.Since(st.started).Seconds()
	return &r
}

// currentInputs stamps everything a verdict on ref in workspace ws depends on.
func (st *state) currentInputs(ref *resolvedModel, ws string) (*runInputs, error) {
	s := st.s
	py, err := s.python()
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding phase0's own executable: %w", err)
	}
	abs := func(p string) string {
		if p == "" {
			return ""
		}
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	in := &runInputs{
		Settings: settingsInputs{
			Command: st.command, Model: st.arg, LLMSDir: abs(s.LLMSDir), Name: s.Name, PromptStyle: s.PromptStyle,
			Prompt: s.Prompt, Decode: s.Decode, MaxSeq: s.MaxSeq, Scan: s.Scan, Force: s.Force, MemoryCheck: s.MemoryCheck,
			AttentionFallback: s.AttentionFallback, Timeout: s.Timeout.String(), ReportDir: abs(s.ReportDir),
			CacheDir: abs(s.CacheDir), PyShimDir: abs(s.PyShimDir),
			OutDir: abs(s.OutDir), MaxPerplexity: s.MaxPerplexityRatio, ReferenceSteps: s.ReferenceSteps,
		},
		Phase0: phase0Inputs{Version: st.version, Executable: stampExecutable(exe)},
		Model:  modelInputs{Dir: ref.Dir, ID: ref.ID, Revision: ref.Revision, PromptStyle: ref.PromptStyle},
	}
	if in.Python, err = stampPython(py); err != nil {
		return nil, err
	}
	if in.Model.Files, err = stampFolder(ref.Dir, false); err != nil {
		return nil, fmt.Errorf("model folder: %w", err)
	}
	if s.LLMSDir != "" {
		for _, sub := range []string{"verify", filepath.Join("verify", "runners"), filepath.Join("verify", "prompts")} {
			files, err := stampFolder(filepath.Join(in.Settings.LLMSDir, sub), true)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%s: %w", sub, err)
			}
			for _, f := range files {
				f.Name = filepath.Join(sub, f.Name)
				in.Verify = append(in.Verify, f)
			}
		}
	}
	if s.PyShimDir != "" {
		if in.Shim, err = stampTree(in.Settings.PyShimDir); err != nil {
			return nil, fmt.Errorf("pyshim %s: %w", s.PyShimDir, err)
		}
	}
	files, err := scaffold.ManifestFiles(ws)
	if err != nil {
		return nil, err
	}
	in.Generated = append(in.Generated, stampHashed(filepath.Join(ws, scaffold.ManifestName), scaffold.ManifestName))
	for _, rel := range files {
		in.Generated = append(in.Generated, stampHashed(filepath.Join(ws, filepath.FromSlash(rel)), rel))
	}
	return in, nil
}

// stampMeta identifies a file by size, mtime, inode and (for a link into the
// HF cache's blobs/) the blob name, which is the hub's hash of its content.
func stampMeta(path, name string) fileStamp {
	f := fileStamp{Name: name}
	if li, err := os.Lstat(path); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		if target, err := os.Readlink(path); err == nil && strings.Contains(filepath.ToSlash(target), "/blobs/") {
			f.Blob = filepath.Base(target)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		f.Absent = true
		return f
	}
	f.Size, f.MTime = fi.Size(), fi.ModTime().UnixNano()
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		f.Inode = sys.Ino
	}
	return f
}

// stampHashed identifies a small file by its content.
func stampHashed(path, name string) fileStamp {
	f := fileStamp{Name: name}
	data, err := boundedfile.Read(path, maxHashedFile)
	if err != nil {
		f.Absent = true
		return f
	}
	f.Size, f.SHA256 = int64(len(data)), sha256Hex(data)
	return f
}

// stampFolder stamps the files directly in dir (not its subfolders), by
// content when hashed, else by metadata.
func stampFolder(dir string, hashed bool) ([]fileStamp, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if len(entries) > maxListed {
		return nil, fmt.Errorf("%s holds %d entries, more than the %d phase0 stamps", dir, len(entries), maxListed)
	}
	out := []fileStamp{}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			continue
		}
		if hashed {
			out = append(out, stampHashed(path, e.Name()))
		} else {
			out = append(out, stampMeta(path, e.Name()))
		}
	}
	return out, nil
}

// stampTree stamps the files of a working copy of the Python shim, skipping
// caches tools write there (__pycache__, .mypy_cache, …).
func stampTree(root string) ([]fileStamp, error) {
	var out []fileStamp
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (d.Name() == "__pycache__" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if len(out) == maxListed {
			return fmt.Errorf("more than %d files", maxListed)
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		out = append(out, stampMeta(path, rel))
		return nil
	})
	return out, err
}

// stampPython stamps the interpreter and the distributions installed in its
// prefix's site-packages, without running it: a venv's python is
// <prefix>/bin/python and its packages are <prefix>/lib/python3.*/site-packages.
func stampPython(py string) (pythonInputs, error) {
	p := pythonInputs{Executable: py, Interpreter: stampMeta(py, filepath.Base(py)), Dists: []string{}}
	prefix := filepath.Dir(filepath.Dir(py))
	p.PyvenvCfg = stampMeta(filepath.Join(prefix, "pyvenv.cfg"), "pyvenv.cfg")
	for _, pattern := range []string{"lib/python3*/site-packages", "lib/python3*/dist-packages", "lib64/python3*/site-packages"} {
		dirs, _ := filepath.Glob(filepath.Join(prefix, filepath.FromSlash(pattern)))
		p.SitePackages = append(p.SitePackages, dirs...)
	}
	for _, dir := range p.SitePackages {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return p, fmt.Errorf("python environment: %w", err)
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasSuffix(name, ".dist-info") || strings.HasSuffix(name, ".egg-info") || strings.HasSuffix(name, ".pth") {
				p.Dists = append(p.Dists, name)
			}
		}
	}
	slices.Sort(p.Dists)
	p.Torch, p.Transformers = distVersion(p.Dists, "torch"), distVersion(p.Dists, "transformers")
	if p.Torch == "" || p.Transformers == "" {
		return p, fmt.Errorf("python environment of %s: torch or transformers not found in %s (cannot tell whether it changed)", py, strings.Join(p.SitePackages, ", "))
	}
	return p, nil
}

// distVersion reads a package's version from its <name>-<version>.dist-info.
func distVersion(dists []string, pkg string) string {
	for _, d := range dists {
		if v, ok := strings.CutPrefix(d, pkg+"-"); ok && strings.HasSuffix(v, ".dist-info") {
			return strings.TrimSuffix(v, ".dist-info")
		}
	}
	return ""
}

// inputsChange names the first input that differs, or "" when none does.
func inputsChange(old, cur *runInputs) string {
	if why := fieldChange("setting", old.Settings, cur.Settings); why != "" {
		return why
	}
	if why := fieldChange("phase0", old.Phase0, cur.Phase0); why != "" {
		return why
	}
	if why := fieldChange("python environment", old.Python, cur.Python); why != "" {
		return why
	}
	if why := fieldChange("model", old.Model, cur.Model); why != "" {
		return why
	}
	for _, l := range []struct {
		what     string
		old, cur []fileStamp
	}{{"verify file", old.Verify, cur.Verify}, {"pyshim file", old.Shim, cur.Shim}, {"generated file", old.Generated, cur.Generated}} {
		if why := stampsChange(l.what, l.old, l.cur); why != "" {
			return why
		}
	}
	return ""
}

// fieldChange compares two values by their JSON and names the first
// top-level field that differs (file lists are named file by file).
func fieldChange(what string, old, cur any) string {
	var a, b map[string]json.RawMessage
	ja, _ := json.Marshal(old)
	jb, _ := json.Marshal(cur)
	if bytes.Equal(ja, jb) {
		return ""
	}
	if json.Unmarshal(ja, &a) != nil || json.Unmarshal(jb, &b) != nil {
		return what + " changed"
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range a {
			if !yield(k) {
				return
			}
		}
		for k := range b {
			if _, dup := a[k]; !dup && !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		if bytes.Equal(a[k], b[k]) {
			continue
		}
		var fa, fb []fileStamp
		if k == "files" && json.Unmarshal(a[k], &fa) == nil && json.Unmarshal(b[k], &fb) == nil {
			return stampsChange(what+" file", fa, fb)
		}
		var da, db []string
		if k == "dists" && json.Unmarshal(a[k], &da) == nil && json.Unmarshal(b[k], &db) == nil {
			if i := slices.IndexFunc(db, func(d string) bool { return !slices.Contains(da, d) }); i >= 0 {
				return fmt.Sprintf("%s: %s was installed", what, db[i])
			}
			if i := slices.IndexFunc(da, func(d string) bool { return !slices.Contains(db, d) }); i >= 0 {
				return fmt.Sprintf("%s: %s was removed", what, da[i])
			}
		}
		return fmt.Sprintf("%s %s changed (%s → %s)", what, k, clip(a[k]), clip(b[k]))
	}
	return what + " changed"
}

// stampsChange names the first file added, removed or changed.
func stampsChange(what string, old, cur []fileStamp) string {
	byName := make(map[string]fileStamp, len(old))
	for _, f := range old {
		byName[f.Name] = f
	}
	for _, f := range cur {
		o, ok := byName[f.Name]
		switch {
		case !ok:
			return fmt.Sprintf("%s %s is new", what, f.Name)
		case o.Absent != f.Absent && f.Absent:
			return fmt.Sprintf("%s %s was removed", what, f.Name)
		case o != f:
			return fmt.Sprintf("%s %s changed", what, f.Name)
		}
		delete(byName, f.Name)
	}
	for _, f := range old {
		if _, gone := byName[f.Name]; gone {
			return fmt.Sprintf("%s %s was removed", what, f.Name)
		}
	}
	return ""
}

func clip(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func readJSONFile(path string, v any) error {
	data, err := boundedfile.Read(path, maxRecordFile)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
