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
	"time"

	"phase0/internal/boundedfile"
	"phase0/report"

	"phase0/configs"
	"phase0/fingerprint"
	"phase0/hfcache"
	"phase0/scaffold"
	"phase0/verdict"
)

// A repeat `run` on unchanged inputs reuses the recorded verdict instead of
// starting Python (seconds of interpreter start, torch import and model
// load for an answer that cannot change). The inputs are everything the
// verdict read, stamped by package fingerprint (size, mtime, ctime, inode,
// device, HF blob; small files by content): every file of the model folder,
// every file of the workspace module (whoever wrote it), the verify/ tree,
// every Python source the worker imported outside the standard library
// (with the import path's folders and the .pth files, so a new
// sitecustomize is seen), the environment variables that steer Python and
// torch, the settings that change a verdict, phase0's build, the
// interpreter and its installed distributions, and the recorded reference
// the report names. Only a PASS is reused: a FAIL may come from the machine
// (memory, a timeout, a crash) and is cheap to recompute anyway. When in
// doubt (a file that cannot be stamped, a record without a stamp) nothing
// is reused and the run says which input changed. The import map, the
// folders submodules were looked up in, the environment rules and the CPU
// flags are fingerprint.Sources'; the extracted shim is checked against the
// binary's own copy (shim.go) before it is stamped.

// inputsName is the file, next to report.json, that records the inputs of
// the verdict in report.json.
const inputsName = "inputs.json"

// inputsFormat changes when the stamps change meaning; an older record is
// then simply not reused. 3: the settings are keyed by their YAML key
// (configs.Table), cpu_helpers.attention_fallback included. 4: the sources
// carry the import map, the lookup folders and the CPU flags; the built-in
// shim is stamped.
const inputsFormat = 4

// maxRecordFile bounds report.json and inputs.json.
const maxRecordFile = 64 << 20

// runInputs is what a `run` verdict depends on.
type runInputs struct {
	Settings settingsInputs          `json:"settings"`
	Phase0   phase0Inputs            `json:"phase0"`
	Python   fingerprint.Interpreter `json:"python"`
	Model    modelInputs             `json:"model"`
	Verify   []fingerprint.File      `json:"verify"`
	Shim     []fingerprint.File      `json:"shim"`
	// Workspace is every file of the workspace module: the manifest, the
	// files it lists and every .py file there, whoever wrote it.
	Workspace []fingerprint.File `json:"workspace"`
	// Sources and Reference are stamped at the end of a run (the worker
	// reports what it imported; the reference is recorded late).
	Sources   *fingerprint.Sources `json:"sources,omitempty"`
	Reference *referenceStamp      `json:"reference,omitempty"`
	// shimRepaired says why the built-in shim's unpacked copy was unpacked
	// again while it was stamped ("" when it was intact): not recorded, a
	// reason not to reuse.
	shimRepaired string
}

// referenceStamp is the recorded reference a reused PASS names: it must
// still be there, byte for byte, for the verdict to be reused.
type referenceStamp struct {
	Dir       string             `json:"dir"`
	KeySHA256 string             `json:"key_sha256"`
	Files     []fingerprint.File `json:"files"`
}

// settingsInputs are the settings that can change a verdict or where it is
// recorded, by YAML key: the command, the model argument, and every setting
// configs.Table marks Verdict (not fresh, workers or the progress display).
type settingsInputs map[string]any

// stampSettings reads the verdict's settings from s; a path is made absolute.
func stampSettings(command, model string, s *Settings) (settingsInputs, error) {
	in := settingsInputs{"command": command, "model": model}
	for _, row := range configs.Table {
		if !row.Verdict {
			continue
		}
		v, err := row.Get(s)
		if err != nil {
			return nil, err
		}
		switch x := v.(type) {
		case string:
			if row.Kind == configs.Path {
				v = absPath(x)
			}
		case time.Duration:
			v = x.String()
		}
		in[row.Key] = v
	}
	return in, nil
}

// absPath is p made absolute ("" stays "").
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

type phase0Inputs struct {
	Version    string           `json:"version"`
	Executable fingerprint.File `json:"executable"`
}

type modelInputs struct {
	Dir         string             `json:"dir"`
	ID          string             `json:"id"`
	Revision    string             `json:"revision,omitempty"`
	PromptStyle string             `json:"prompt_style,omitempty"`
	Files       []fingerprint.File `json:"files"`
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
//
// Its result keeps what it stamped (compared again when the run records)
// and, when the verdict is reused, the recorded report: the chain ends there.
func reuseStage(_ context.Context, st *state) (reuseResult, outcome, error) {
	var res reuseResult
	rec, why := st.reusable(&res.stamp)
	if why != "" {
		return res, outcome{status: verdict.Skip, detail: why + "; running everything"}, nil
	}
	res.reused = rec
	return res, outcome{status: verdict.Pass, detail: fmt.Sprintf("inputs unchanged since %s: reusing %s", rec.ReusedFrom.Recorded.Format(time.RFC3339), rec.ReusedFrom.Path), done: true}, nil
}

// reuseResult is the reuse stage's: the inputs stamped before the run (nil
// when they could not be), and the recorded verdict when it is reused.
type reuseResult struct {
	stamp  *runInputs
	reused *report.Report
}

// reusable returns the recorded report when it can be reused, else why not.
// Whatever it stamps goes to *stamp, to be compared at the end of a full
// run; under --fresh it only stamps.
func (st *state) reusable(stamped **runInputs) (*report.Report, string) {
	s := st.in.s
	ref, why := reuseModel(s, st.in.arg)
	if why != "" {
		return nil, why
	}
	ws, err := workspaceDir(s, ref.ID)
	if err != nil {
		return nil, err.Error()
	}
	reports, err := reportDirFor(s, ws, ref.ID)
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
		*stamped = cur
		return "", true
	}
	if ref.Dir != "" {
		if why, ok := stamp(); !ok {
			return nil, why
		}
	}
	if s.Fresh {
		return nil, "--fresh"
	}
	if s.Refresh {
		return nil, "--refresh (the reference is recorded anew)"
	}
	var rec inputsRecord
	if err := readJSONFile(filepath.Join(reports, inputsName), &rec); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, err := os.Stat(filepath.Join(reports, "report.json")); err == nil {
				return nil, "the verdict recorded in " + reports + " is not a reusable PASS"
			}
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
	if (*stamped).shimRepaired != "" {
		return nil, (*stamped).shimRepaired
	}
	if rec.Format != inputsFormat {
		return nil, fmt.Sprintf("the recorded inputs are format %d, this phase0 writes %d", rec.Format, inputsFormat)
	}
	if why := inputsChange(&rec.Inputs, *stamped); why != "" {
		return nil, why
	}
	data, err := boundedfile.Read(rec.Report, maxRecordFile)
	if err != nil {
		return nil, "the recorded report is unreadable: " + err.Error()
	}
	if sha256Hex(data) != rec.ReportSHA256 {
		return nil, rec.Report + " changed since it was recorded"
	}
	var r report.Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Sprintf("%s is not a phase0 report: %v", rec.Report, err)
	}
	if r.Status != verdict.Pass {
		return nil, fmt.Sprintf("the recorded verdict is %s; only a PASS is reused", r.Status)
	}
	if rec.Inputs.Sources == nil {
		return nil, "the recorded inputs list no Python sources"
	}
	if why := fingerprint.SourcesChange(*rec.Inputs.Sources, rec.Inputs.Sources.Restamp()); why != "" {
		return nil, why
	}
	if why := referenceStillThere(&r, rec.Inputs.Reference); why != "" {
		return nil, why
	}
	r.ReusedFrom = &report.ReusedFrom{Path: rec.Report, Recorded: rec.Recorded}
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

// recordInputsStage stamps the inputs of a PASS about to be recorded, so
// the next run with the same inputs can reuse it: the record stage writes
// them (inputs.json) with the report, in one commit. For any other verdict
// it returns nil, and the record removes a stale inputs.json. Inputs that
// changed while the run read them are not recorded.
func recordInputsStage(ctx context.Context, st *state) (*inputsRecord, outcome, error) {
	ws, ref := st.facts.workspace.dir, st.facts.model
	reports, err := reportDirFor(st.in.s, ws, ref.ID)
	if err != nil {
		return nil, outcome{}, err
	}
	path := filepath.Join(reports, inputsName)
	forget := func(why string) (*inputsRecord, outcome, error) {
		return nil, outcome{status: verdict.Skip, detail: why + "; the next run runs everything"}, nil
	}
	if status := st.status(); status != verdict.Pass {
		return forget(fmt.Sprintf("verdict %s is not reused", status))
	}
	// A PASS whose reference could not be recorded must not be reused: the
	// next run would skip the recording the later phases need.
	if r := st.sections.reference; r != nil && r.Status != verdict.Pass {
		return forget("the reference was not recorded")
	}
	cur, err := st.currentInputs(ref, ws)
	if err != nil {
		return forget(err.Error())
	}
	if stamped := st.facts.reuse.stamp; stamped != nil && stamped.Model.Dir == cur.Model.Dir {
		before := *stamped
		before.Workspace = cur.Workspace // the run itself writes them
		if why := inputsChange(&before, cur); why != "" {
			return forget(why + " during the run")
		}
	}
	if st.client == nil || !st.client.Started() {
		return forget("no Python ran")
	}
	im, err := st.client.PythonSources(ctx)
	if err != nil {
		return forget("the worker could not list the Python it ran: " + reasons(err)[0])
	}
	sources := fingerprint.StampSources(im)
	cur.Sources = &sources
	if r := st.sections.reference; r != nil {
		files, err := fingerprint.Tree(r.Dir, fingerprint.TreeOptions{})
		if err != nil {
			return forget("the reference just recorded cannot be stamped: " + err.Error())
		}
		cur.Reference = &referenceStamp{Dir: r.Dir, KeySHA256: r.KeySHA256, Files: files}
	}
	// Report and ReportSHA256 are the record stage's: it renders report.json.
	return &inputsRecord{Format: inputsFormat, Recorded: st.in.started, Inputs: *cur}, pass(path + " (written with the report)"), nil
}

// reusedReport is the recorded report, marked as reused, with this run's
// stages and timing.
func (st *state) reusedReport() *report.Report {
	r := *st.facts.reuse.reused
	r.Stages = append([]report.Stage{}, st.stages...)
	r.Started = st.in.started
	r.Seconds = time.Since(st.in.started).Seconds()
	return &r
}

// currentInputs stamps everything a verdict on ref in workspace ws depends on.
func (st *state) currentInputs(ref *resolvedModel, ws string) (*runInputs, error) {
	s := st.in.s
	py, err := s.python()
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding phase0's own executable: %w", err)
	}
	settings, err := stampSettings(st.in.command, st.in.arg, s)
	if err != nil {
		return nil, err
	}
	in := &runInputs{
		Settings: settings,
		Phase0:   phase0Inputs{Version: st.in.version, Executable: stampExecutable(exe)},
		Model:    modelInputs{Dir: ref.Dir, ID: ref.ID, Revision: ref.Revision, PromptStyle: ref.PromptStyle},
	}
	if in.Python, err = fingerprint.StampInterpreter(py); err != nil {
		return nil, err
	}
	if in.Model.Files, err = fingerprint.Tree(ref.Dir, fingerprint.TreeOptions{}); err != nil {
		return nil, fmt.Errorf("model folder: %w", err)
	}
	if s.LLMSDir != "" {
		// The whole verify/ tree: the runner, its prompts, and whatever the
		// runner reads or imports from sub-folders.
		in.Verify, err = fingerprint.Tree(filepath.Join(absPath(s.LLMSDir), "verify"), fingerprint.TreeOptions{})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("verify: %w", err)
		}
	}
	// Every file of the shim the worker will run: a working copy as it is,
	// the built-in copy once checked against the binary (and unpacked
	// again when it was altered, which is then the reason not to reuse).
	shim, repaired, err := s.verifiedShim()
	if err != nil {
		return nil, err
	}
	in.shimRepaired = repaired
	if in.Shim, err = fingerprint.Tree(absPath(shim), fingerprint.TreeOptions{Skip: []string{".mypy_cache", ".pytest_cache"}}); err != nil {
		return nil, fmt.Errorf("pyshim %s: %w", shim, err)
	}
	if in.Workspace, err = stampWorkspace(ws); err != nil {
		return nil, err
	}
	return in, nil
}

// stampWorkspace stamps the workspace module: the manifest and the files it
// lists (phase0's), and every .py file of the folder (anyone's: a validated
// upstream module has no manifest).
func stampWorkspace(ws string) ([]fingerprint.File, error) {
	listed, err := scaffold.ManifestFiles(ws)
	if err != nil {
		return nil, err
	}
	listed = append(listed, scaffold.ManifestName)
	files, err := fingerprint.Tree(ws, fingerprint.TreeOptions{
		Skip:  []string{"reference", ".phase0"},
		Files: func(rel string) bool { return strings.HasSuffix(rel, ".py") || slices.Contains(listed, rel) },
	})
	if errors.Is(err, fs.ErrNotExist) {
		return []fingerprint.File{}, nil // not generated yet: every listed file is new at the end
	}
	return files, err
}

// referenceStillThere says why a recorded PASS cannot be reused because of
// its reference ("" when it can): a PASS that names a recording needs that
// recording, unchanged.
func referenceStillThere(r *report.Report, stamp *referenceStamp) string {
	if r.Reference == nil || r.Reference.Status != verdict.Pass {
		return ""
	}
	if stamp == nil || stamp.KeySHA256 != r.Reference.KeySHA256 {
		return "the recorded inputs do not stamp the reference the report names"
	}
	files, err := fingerprint.Tree(stamp.Dir, fingerprint.TreeOptions{})
	if errors.Is(err, fs.ErrNotExist) {
		return "the recorded reference " + stamp.Dir + " is gone (it is recorded again)"
	}
	if err != nil {
		return "the recorded reference cannot be stamped: " + err.Error()
	}
	if why := fingerprint.Change("reference file", stamp.Files, files); why != "" {
		return why + " in " + stamp.Dir + " (it is recorded again)"
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
		old, cur []fingerprint.File
	}{{"verify file", old.Verify, cur.Verify}, {"pyshim file", old.Shim, cur.Shim}, {"workspace file", old.Workspace, cur.Workspace}} {
		if why := fingerprint.Change(l.what, l.old, l.cur); why != "" {
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
		var fa, fb []fingerprint.File
		if k == "files" && json.Unmarshal(a[k], &fa) == nil && json.Unmarshal(b[k], &fb) == nil {
			return fingerprint.Change(what+" file", fa, fb)
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
