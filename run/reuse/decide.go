package reuse

import (
	"bytes"
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

	"phase0/gate/verdict"
	"phase0/internal/boundedfile"
	"phase0/output/report"
	"phase0/output/scaffold"
	"phase0/read/fingerprint"
	"phase0/read/hfcache"
	"phase0/read/model"
)

// Recorded reads the inputs recorded in reports (inputs.json); why says, when
// there are none to compare with, why not.
func Recorded(reports string) (*Record, string) {
	var rec Record
	if err := ReadJSON(filepath.Join(reports, FileName), &rec); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, err := os.Stat(filepath.Join(reports, "report.json")); err == nil {
				return nil, "the verdict recorded in " + reports + " is not a reusable PASS"
			}
			return nil, "no recorded verdict in " + reports
		}
		return nil, "the recorded inputs are unreadable: " + err.Error()
	}
	return &rec, ""
}

// Decide returns the recorded report, marked as reused, when rec's verdict
// can stand for a run whose inputs are cur; else why not. Only a PASS is
// reused, and only while its report, its Python sources and the reference
// it names are unchanged.
func Decide(rec *Record, cur *Inputs) (*report.Report, string) {
	if cur.ShimRepaired != "" {
		return nil, cur.ShimRepaired
	}
	if rec.Format != Format {
		return nil, fmt.Sprintf("the recorded inputs are format %d, this phase0 writes %d", rec.Format, Format)
	}
	if why := Change(&rec.Inputs, cur); why != "" {
		return nil, why
	}
	data, err := boundedfile.Read(rec.Report, MaxRecordFile)
	if err != nil {
		return nil, "the recorded report is unreadable: " + err.Error()
	}
	if SHA256Hex(data) != rec.ReportSHA256 {
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

// Locate finds a model's id, and its folder, without Python and without
// the network: a local folder, or a hub id complete in the HF cache at
// cache. why says when the argument cannot be found that way; the full run
// then resolves it.
func Locate(arg, cache string) (ModelInputs, string) {
	if fi, err := os.Stat(arg); err == nil {
		if !fi.IsDir() {
			return ModelInputs{}, arg + " is not a folder"
		}
		id, dir, err := model.LocalFolder(arg)
		if err != nil {
			return ModelInputs{}, err.Error()
		}
		return ModelInputs{Dir: dir, ID: id}, ""
	}
	ref, err := hfcache.ParseID(arg)
	if err != nil {
		return ModelInputs{}, "no such folder or hub id " + arg
	}
	res, err := hfcache.Resolve(cache, ref)
	if err != nil || !res.Complete() {
		return ModelInputs{}, ref.ID + " is not complete in the HF cache"
	}
	return ModelInputs{Dir: res.Dir, Revision: res.Revision, ID: ref.ID}, ""
}

// StampWorkspace stamps the workspace module: the manifest and the files it
// lists (phase0's), and every .py file of the folder (anyone's: a validated
// upstream module has no manifest).
func StampWorkspace(ws string) ([]fingerprint.File, error) {
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
func referenceStillThere(r *report.Report, stamp *ReferenceStamp) string {
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

// Change names the first input that differs, or "" when none does.
func Change(old, cur *Inputs) string {
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
	return quantChange(old.Quant, cur.Quant)
}

// quantChange names the first input of a quantized key that differs.
func quantChange(old, cur *QuantInputs) string {
	switch {
	case old == nil && cur == nil:
		return ""
	case old == nil || cur == nil:
		return "the recorded inputs are not of this quantized key"
	}
	if old.Folder != cur.Folder || old.Key != cur.Key {
		return fmt.Sprintf("quantized key %s %q → %s %q", old.Folder, old.Key, cur.Folder, cur.Key)
	}
	if why := fieldChange("MODEL_CHOICES entry", map[string]any{"choice": old.Choice}, map[string]any{"choice": cur.Choice}); why != "" {
		return why
	}
	if why := fieldChange("environment variable", old.Env, cur.Env); why != "" {
		return why
	}
	if why := fingerprint.Change("bundle file", old.Bundle, cur.Bundle); why != "" {
		return why
	}
	if why := fieldChange("pairing candidate", old.Candidates, cur.Candidates); why != "" {
		return why
	}
	return fingerprint.Change("reference record file", old.ReferenceRecord, cur.ReferenceRecord)
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

func ReadJSON(path string, v any) error {
	data, err := boundedfile.Read(path, MaxRecordFile)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
