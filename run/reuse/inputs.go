// Package reuse decides whether a recorded `run` verdict can stand for a
// new run: what inputs.json records, how the inputs are compared, and which
// recorded PASS is reused. Stamping is package fingerprint's; the stage that
// asks is orchestrator's.
package reuse

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"phase0/read/fingerprint"
	"phase0/read/llmstree"
	"phase0/run/settings"
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
// binary's own copy (pyshim.Unpacked) before it is stamped.

// FileName is the file, next to report.json, that records the inputs of
// the verdict in report.json.
const FileName = "inputs.json"

// Format changes when the stamps change meaning; an older record is
// then simply not reused. 3: the settings are keyed by their YAML key
// (settings.Table), cpu_helpers.attention_fallback included. 4: the sources
// carry the import map, the lookup folders and the CPU flags; the built-in
// shim is stamped. (A quantized key's stamps, quant, are a field a bf16
// record leaves out.)
const Format = 4

// MaxRecordFile bounds report.json and inputs.json.
const MaxRecordFile = 64 << 20

// Inputs is what a `run` verdict depends on.
type Inputs struct {
	Settings SettingsInputs          `json:"settings"`
	Phase0   Phase0                  `json:"phase0"`
	Python   fingerprint.Interpreter `json:"python"`
	Model    ModelInputs             `json:"model"`
	Verify   []fingerprint.File      `json:"verify"`
	Shim     []fingerprint.File      `json:"shim"`
	// Workspace is every file of the workspace module: the manifest, the
	// files it lists and every .py file there, whoever wrote it.
	Workspace []fingerprint.File `json:"workspace"`
	// Sources and Reference are stamped at the end of a run (the worker
	// reports what it imported; the reference is recorded late).
	Sources   *fingerprint.Sources `json:"sources,omitempty"`
	Reference *ReferenceStamp      `json:"reference,omitempty"`
	// Quant is what a quantized folder's key depends on besides (nil for
	// a bf16 run).
	Quant *QuantInputs `json:"quant,omitempty"`
	// ShimRepaired says why the built-in shim's unpacked copy was unpacked
	// again while it was stamped ("" when it was intact): not recorded, a
	// reason not to reuse.
	ShimRepaired string `json:"-"`
}

// QuantInputs are what the verdict of a quantized folder's key depends on
// beyond a bf16 run's inputs (the reference's folder is Model, the
// quantized folder's modules are Workspace, every module they import from
// the tree — fused_decode, a borrowed bf16 folder's weights module — is
// among Sources): the key's MODEL_CHOICES entry as parsed, the bundle's
// snapshot (each blob by the hub's hash of its content, the card, its
// config.json), the other checkpoints the pairing measured, the variables
// the folder's own code reads, and the reference's own bf16 record, whose
// baseline gate 2 reuses.
type QuantInputs struct {
	Folder     string                        `json:"folder"`
	Key        string                        `json:"key"`
	Choice     llmstree.Use                  `json:"choice"`
	Bundle     []fingerprint.File            `json:"bundle"`
	Candidates map[string][]fingerprint.File `json:"candidates"`
	Env        map[string]string             `json:"env"`
	// ReferenceRecord stamps report.json and inputs.json of the reference's
	// bf16 record (by content; absent when there is none).
	ReferenceRecord []fingerprint.File `json:"reference_record"`
}

// ReferenceStamp is the recorded reference a reused PASS names: it must
// still be there, byte for byte, for the verdict to be reused.
type ReferenceStamp struct {
	Dir       string             `json:"dir"`
	KeySHA256 string             `json:"key_sha256"`
	Files     []fingerprint.File `json:"files"`
}

// SettingsInputs are the settings that can change a verdict or where it is
// recorded, by YAML key: the command, the model argument, and every setting
// settings.Table marks Verdict (not fresh, workers or the progress display).
type SettingsInputs map[string]any

// StampSettings reads the verdict's settings from s (a pointer to the
// struct settings.Table describes); a path is made absolute.
func StampSettings(command, model string, s any) (SettingsInputs, error) {
	in := SettingsInputs{"command": command, "model": model}
	for _, row := range settings.Table {
		if !row.Verdict {
			continue
		}
		v, err := row.Get(s)
		if err != nil {
			return nil, err
		}
		switch x := v.(type) {
		case string:
			if row.Kind == settings.Path {
				v = AbsPath(x)
			}
		case time.Duration:
			v = x.String()
		}
		in[row.Key] = v
	}
	return in, nil
}

// AbsPath is p made absolute ("" stays ""; p itself when it cannot be):
// how a path setting is stamped, and what the orchestrator compares with it.
func AbsPath(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

type Phase0 struct {
	Version    string           `json:"version"`
	Executable fingerprint.File `json:"executable"`
}

type ModelInputs struct {
	Dir         string             `json:"dir"`
	ID          string             `json:"id"`
	Revision    string             `json:"revision,omitempty"`
	PromptStyle string             `json:"prompt_style,omitempty"`
	Files       []fingerprint.File `json:"files"`
}

// Record is inputs.json.
type Record struct {
	Format       int       `json:"format"`
	Recorded     time.Time `json:"recorded"`
	Report       string    `json:"report"`
	ReportSHA256 string    `json:"report_sha256"`
	Inputs       Inputs    `json:"inputs"`
}

// Where says where what a verdict read lives.
type Where struct {
	Python  string // the interpreter
	LLMSDir string // the llms tree, absolute ("" when there is none)
	// Shim is the folder of phase0_shim the worker runs, and why it was
	// unpacked again ("" when it was not): a working copy as it is, the
	// built-in copy once checked against the binary.
	Shim      func() (dir, repaired string, err error)
	Workspace string // the workspace module's folder
}

// Stamp completes in (its settings, phase0's version and the model named)
// with the stamps of everything at w and of phase0's own executable. A
// shim unpacked again is a reason not to reuse (Inputs.ShimRepaired).
func Stamp(in *Inputs, w Where) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding phase0's own executable: %w", err)
	}
	in.Phase0.Executable = StampExecutable(exe)
	if in.Python, err = fingerprint.StampInterpreter(w.Python); err != nil {
		return err
	}
	if in.Model.Files, err = fingerprint.Tree(in.Model.Dir, fingerprint.TreeOptions{}); err != nil {
		return fmt.Errorf("model folder: %w", err)
	}
	if w.LLMSDir != "" {
		// The whole verify/ tree: the runner, its prompts, and whatever the
		// runner reads or imports from sub-folders.
		in.Verify, err = fingerprint.Tree(filepath.Join(w.LLMSDir, "verify"), fingerprint.TreeOptions{})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("verify: %w", err)
		}
	}
	shim, repaired, err := w.Shim()
	if err != nil {
		return err
	}
	in.ShimRepaired = repaired
	if in.Shim, err = fingerprint.Tree(AbsPath(shim), fingerprint.TreeOptions{Skip: []string{".mypy_cache", ".pytest_cache"}}); err != nil {
		return fmt.Errorf("pyshim %s: %w", shim, err)
	}
	in.Workspace, err = StampWorkspace(w.Workspace)
	return err
}

// QuantEnv are the environment variables a quantized folder's own code
// reads (upstream's loaders take the bundle from Q4NX_MODEL_SOURCE).
var QuantEnv = []string{"Q4NX_MODEL_SOURCE"}

// StampQuant stamps what a quantized key's verdict depends on besides a
// bf16 run's inputs: the key's MODEL_CHOICES entry, the bundle it loads
// (source: its folder, "" when the key names none), the checkpoints the
// pairing measured (id → folder), the variables of QuantEnv that lookup
// finds, and the reference's own bf16 record in referenceReports.
func StampQuant(use llmstree.Use, source string, candidates map[string]string, lookup func(string) (string, bool), referenceReports string) (*QuantInputs, error) {
	in := &QuantInputs{Folder: use.Folder, Key: use.Key, Choice: use, Bundle: []fingerprint.File{},
		Candidates: map[string][]fingerprint.File{}, Env: map[string]string{}}
	for _, name := range QuantEnv {
		if v, ok := lookup(name); ok {
			in.Env[name] = v
		}
	}
	var err error
	if use.Bundle != "" {
		if in.Bundle, err = fingerprint.Tree(source, fingerprint.TreeOptions{}); err != nil {
			return nil, fmt.Errorf("bundle %s: %w", source, err)
		}
	}
	for id, dir := range candidates {
		if in.Candidates[id], err = fingerprint.Tree(dir, fingerprint.TreeOptions{}); err != nil {
			return nil, fmt.Errorf("pairing candidate %s: %w", id, err)
		}
	}
	for _, name := range []string{"report.json", FileName} {
		in.ReferenceRecord = append(in.ReferenceRecord, fingerprint.Stat(filepath.Join(referenceReports, name), name, MaxRecordFile))
	}
	return in, nil
}
