// Package quantfolder reads a quantized deployment folder of an mlir-air
// llms tree (llama32_1b_q4nx …) and the bundle it loads: which
// MODEL_CHOICES keys a command means, the folder's weights module and its
// format, the bundle from the HF cache (offline) with its config.json and
// model card, and the other cached checkpoints the bundle might come from.
// It reads files only; package quant judges, the orchestrator runs.
package quantfolder

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"phase0/gate/quant"
	"phase0/gate/verdict"
	"phase0/internal/boundedfile"
	"phase0/read/hfcache"
	"phase0/read/llmstree"
	"phase0/read/model"
	"phase0/wire"
)

// MaxTextBytes bounds a file of the tree or the bundle read as text (a
// weights module, verify_adapter.py, a model card).
const MaxTextBytes = 16 << 20

// Uses says which quantized keys validating arg through the tree at llms
// means: with name naming a quantized folder, its keys whose reference is
// arg; without a name, every key of the folders that load the bundle arg.
// A bf16 id without a name is a bf16 run (none); so is a name that is not a
// quantized folder.
func Uses(llmsDir string, reserved []string, name, arg string) ([]llmstree.Use, error) {
	if llmsDir == "" || strings.Count(arg, "/") != 1 {
		return nil, nil
	}
	folders, err := llmstree.Scan(llmsDir, reserved)
	if err != nil {
		return nil, err
	}
	id, _, _ := strings.Cut(arg, "@")
	if name != "" {
		for _, f := range folders {
			if f.Name == name && f.Quant != nil {
				uses := llmstree.QuantizedUses(folders, id, name)
				if len(uses) == 0 {
					return nil, fmt.Errorf("%s/verify_adapter.py: no MODEL_CHOICES key pairs %s (keys: %s)", name, id, choicesText(f.Quant.Choices))
				}
				return uses, nil
			}
		}
		return nil, nil
	}
	var uses []llmstree.Use
	for _, u := range llmstree.QuantizedUses(folders, id, "") {
		if strings.EqualFold(u.Bundle, id) {
			uses = append(uses, u)
		}
	}
	return uses, nil
}

func choicesText(cs []llmstree.Choice) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%q: %s", c.Key, c.Reference))
	}
	return strings.Join(parts, ", ")
}

// Folder is one key's quantized folder: the module, its format, what its
// loader reads, and the bundle's own config and card.
type Folder struct {
	Use    llmstree.Use
	Dir    string // <llms>/<folder>
	Module string // its weights module
	Src    []byte // the module's text
	Format quant.Format
	Source string // what the loader is given: the bundle's snapshot, else the reference's folder
	// Candidates are the other checkpoints the bundle might come from
	// (the folder's other references, the card's base_model) that are
	// cached: the numbers back the pairing.
	Candidates []quant.CandidateID
	Bundle     *model.Config // the bundle's config.json, when it ships one
	Declared   string        // the bundle card's base_model
	// BundleProblems say which of the bundle's safetensors files (model.q4nx
	// is one) has a header that does not fit the file: truncated, or
	// shapes, dtypes or offsets that lie. Quantized gate 1 fails on them
	// before any loader reads the bundle.
	BundleProblems []string
	// BundleDTypes are the dtypes the bundle's headers give each tensor.
	BundleDTypes map[string]string
}

// SourceVar is the variable upstream's Q4NX folders read the bundle from
// instead of their default (os.environ.get("Q4NX_MODEL_SOURCE", …)): a hub
// id, a folder holding model.q4nx, or the file itself.
const SourceVar = "Q4NX_MODEL_SOURCE"

// Open reads u's folder under llms and resolves its bundle through the HF
// cache at cache (offline); refDir is the reference checkpoint's folder.
// source is SourceVar's value in the run's environment ("" unset): when the
// folder reads that variable, the bundle judged is the one it names, as the
// folder's own code would load it. Warnings say what was unreadable but not
// needed.
func Open(llms string, u llmstree.Use, refDir, cache, source string) (*Folder, []string, error) {
	var warnings []string
	q := &Folder{Use: u, Dir: filepath.Join(llms, u.Folder), Source: refDir}
	q.Module = filepath.Join(q.Dir, u.Module)
	var err error
	if q.Src, err = boundedfile.Read(q.Module, MaxTextBytes); err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", q.Module, err)
	}
	if q.Format, err = quant.Detect(q.Src); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", q.Module, err)
	}
	dir, name := "", u.Bundle
	if source != "" && u.Bundle != "" && readsVar(q.Dir, SourceVar) {
		var hubID string
		if dir, hubID, err = sourceDir(source, cache, u.Folder); err != nil {
			return nil, nil, err
		}
		name = SourceVar + "=" + source
		if hubID != "" {
			q.Use.Bundle, u.Bundle, name = hubID, hubID, hubID
		}
	} else if u.Bundle != "" {
		ref, err := hfcache.ParseID(u.Bundle)
		if err != nil {
			return nil, nil, fmt.Errorf("bundle %s: %w", u.Bundle, err)
		}
		res, err := hfcache.Resolve(cache, ref)
		if err != nil {
			return nil, nil, fmt.Errorf("bundle %s of %s is not in the HF cache (phase0 reads bundles offline; fetch it with `hf download %s`): %w", u.Bundle, u.Folder, u.Bundle, err)
		}
		dir = res.Dir
	}
	if dir != "" {
		q.Source = dir
		q.BundleProblems, q.BundleDTypes = checkBundle(name, dir)
		if card, err := boundedfile.Read(filepath.Join(dir, "README.md"), MaxTextBytes); err == nil {
			q.Declared = quant.BaseModel(card)
		}
		if raw, err := model.ReadRaw(os.DirFS(dir)); err == nil {
			if a := model.Analyze(raw); a.Config != nil {
				q.Bundle = a.Config
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			warnings = append(warnings, fmt.Sprintf("bundle %s: config.json unreadable: %v", name, err))
		}
	}
	q.Candidates = candidates(cache, &u, q.Declared)
	return q, warnings, nil
}

// readsVar says whether a Python file of the folder dir names the
// environment variable v (its prefill or inference reads the bundle from it).
func readsVar(dir, v string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.py"))
	for _, f := range files {
		if src, err := boundedfile.Read(f, MaxTextBytes); err == nil && strings.Contains(string(src), v) {
			return true
		}
	}
	return false
}

// sourceDir is the folder holding the bundle SourceVar names, as the
// folder's loader resolves it: a folder holding model.q4nx, the file
// itself (its folder), else a hub id from the HF cache (offline; hubID is
// then the id, without a revision). Anything
// else is refused naming the variable: phase0 does not judge a default
// the folder would not load.
func sourceDir(source, cache, folder string) (dir, hubID string, err error) {
	if fi, err := os.Stat(source); err == nil {
		abs, err := filepath.Abs(source)
		if err != nil {
			return "", "", err
		}
		if !fi.IsDir() {
			if filepath.Base(abs) != "model.q4nx" {
				return "", "", fmt.Errorf("%s=%s (set in the environment, which %s loads instead of its bundle) is a file not named model.q4nx: phase0 judges a bundle folder; point it at the folder holding model.q4nx, or unset it", SourceVar, source, folder)
			}
			return filepath.Dir(abs), "", nil
		}
		if _, err := os.Stat(filepath.Join(abs, "model.q4nx")); err != nil {
			return "", "", fmt.Errorf("%s=%s (set in the environment, which %s loads instead of its bundle) is a folder with no model.q4nx: %w", SourceVar, source, folder, err)
		}
		return abs, "", nil
	}
	ref, perr := hfcache.ParseID(source)
	if perr != nil || !strings.Contains(source, "/") || filepath.IsAbs(source) || strings.HasPrefix(source, ".") {
		return "", "", fmt.Errorf("%s=%s (set in the environment, which %s loads instead of its bundle) is neither an existing file or folder nor a hub id: unset it or point it at the bundle to judge", SourceVar, source, folder)
	}
	res, err := hfcache.Resolve(cache, ref)
	if err != nil {
		return "", "", fmt.Errorf("%s=%s (set in the environment, which %s loads instead of its bundle) is not in the HF cache (phase0 reads bundles offline; fetch it with `hf download %s`, or unset the variable): %w", SourceVar, source, folder, source, err)
	}
	id, _, _ := strings.Cut(source, "@")
	return res.Dir, id, nil
}

// candidates are the checkpoints other than the key's reference that the
// bundle might come from (the folder's other MODEL_CHOICES references and
// the card's base_model), those complete in the HF cache.
func candidates(cache string, u *llmstree.Use, declared string) []quant.CandidateID {
	if u.Bundle == "" {
		return nil // quantized on load from the reference: nothing to tell apart
	}
	var ids []string
	for _, c := range u.Choices {
		ids = append(ids, c.Reference)
	}
	ids = append(ids, declared)
	var out []quant.CandidateID
	for _, id := range ids {
		if id == "" || strings.EqualFold(id, u.Reference) || slices.ContainsFunc(out, func(c quant.CandidateID) bool { return strings.EqualFold(c.ID, id) }) {
			continue
		}
		ref, err := hfcache.ParseID(id)
		if err != nil {
			continue
		}
		if res, err := hfcache.Resolve(cache, ref); err == nil && res.Complete() {
			out = append(out, quant.CandidateID{ID: id, Dir: res.Dir})
		}
	}
	return out
}

// Readable is when (ok, why) for quantized gate 2, which loads the bundle:
// not when the bundle's headers do not fit its files (gate 1 said why).
func (q *Folder) Readable(ok bool, why string) (bool, string) {
	if q != nil && len(q.BundleProblems) > 0 {
		return false, "the bundle's files are unreadable (quantized gate 1 names them)"
	}
	return ok, why
}

// E2ENotRun is why quantized gate 2 does not run, or "": the bundle's
// files are unreadable, or quantized gate 1 (w) failed or did not run (its
// findings say what is wrong with the bundle). The bf16 baseline beside it
// runs on the reference alone either way.
func (q *Folder) E2ENotRun(w *quant.Weights) string {
	if ok, why := q.Readable(true, ""); !ok {
		return why
	}
	switch {
	case w == nil:
		return "quantized gate 1 did not run"
	case w.Status == verdict.Fail:
		return "quantized gate 1 failed (its findings name the tensors); the bf16 baseline is the reference's alone"
	}
	return ""
}

// CandidateDirs are the candidates' folders, as the worker reads them.
func (q *Folder) CandidateDirs() []string {
	var dirs []string
	for _, c := range q.Candidates {
		dirs = append(dirs, c.Dir)
	}
	return dirs
}

// ImportError names what the module could not import, and the folder
// beside llms/ that is missing: a --llms-dir holding an extracted llms/
// alone cannot run upstream's quantized modules.
func (q *Folder) ImportError(f *wire.QuantImportFailure) error {
	var rel []string
	for _, p := range f.MissingPaths {
		if r, err := filepath.Rel(q.Dir, p); err == nil {
			rel = append(rel, r)
		} else {
			rel = append(rel, p)
		}
	}
	if len(rel) == 0 {
		return fmt.Errorf("%s cannot be imported: %s", q.Module, f.Message)
	}
	return fmt.Errorf("%s imports %s from %s, which does not exist: --llms-dir must be the llms/ folder of a programming_examples checkout (the quantized modules import from its siblings: %s)",
		q.Module, f.Module, strings.Join(rel, ", "), strings.Join(rel, ", "))
}

// Constants are the module's hard-coded constants as text, completed by
// those of the folder's verify_adapter.py (the module's win); files names
// the file of each constant the module does not hard-code itself.
func (q *Folder) Constants() (consts map[string]float64, files map[string]string) {
	consts, files = quant.ModuleConstants(q.Src), map[string]string{}
	if adapter, err := boundedfile.Read(filepath.Join(q.Dir, llmstree.AdapterFile), MaxTextBytes); err == nil {
		for k, v := range quant.ModuleConstants(adapter) {
			if _, ok := consts[k]; !ok {
				consts[k], files[k] = v, llmstree.AdapterFile
			}
		}
	}
	return consts, files
}

// Divisions are the divisions of a dimension by a constant in the module,
// the folder's verify_adapter.py and its *_inference.py files (at most 16),
// and the integer constants those files hard-code (quant.JudgeDivisions).
func (q *Folder) Divisions() ([]quant.Division, quant.Tiles) {
	tiles := quant.Tiles{ByFile: map[string]map[string]float64{}}
	var divs []quant.Division
	add := func(rel string, src []byte) {
		tiles.ByFile[rel] = quant.IntConstants(src)
		tiles.Order = append(tiles.Order, rel)
		divs = append(divs, quant.Divisions(rel, src)...)
	}
	add(q.Module, q.Src)
	if adapter, err := boundedfile.Read(filepath.Join(q.Dir, llmstree.AdapterFile), MaxTextBytes); err == nil {
		add(llmstree.AdapterFile, adapter)
	}
	inference, _ := filepath.Glob(filepath.Join(q.Dir, "*_inference.py"))
	slices.Sort(inference)
	for _, p := range inference[:min(len(inference), 16)] {
		if src, err := boundedfile.Read(p, MaxTextBytes); err == nil {
			add(filepath.Base(p), src)
		}
	}
	return divs, tiles
}
