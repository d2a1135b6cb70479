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

// Bounds on a scan: upstream's tree has ~25 folders and files of tens of KiB.
const (
	maxFolders     = 4096
	maxFileBytes   = 4 << 20
	maxNamingFiles = 16 // *_inference.py files read per folder
)

// AdapterFile is the file whose MODEL_CHOICES names a folder's hub ids.
const AdapterFile = "verify_adapter.py"

// Folder is one model folder of the tree.
type Folder struct {
	Name string
	// IDs are the hub ids its verify_adapter.py and *_inference.py name,
	// in that order, without duplicates.
	IDs []string
	// Files are the files that named them, relative to the folder.
	Files []string
	// Phase0 marks a folder holding <name>_weights.py that defines
	// LlamaConfig and load_weights: a bf16 Phase 0 module. Quantized
	// packagings (…_q4nx, …_int4) name the bf16 ids they are compared
	// against, but their loaders are not Phase 0's: Quant describes them.
	Phase0 bool
	// Quant is set for a quantized deployment folder (quantized.go).
	Quant *Quantized
}

// Names reports whether the folder names id (hub ids compare case-insensitively,
// as the Hub resolves them).
func (f Folder) Names(id string) bool {
	return slices.ContainsFunc(f.IDs, func(have string) bool { return strings.EqualFold(have, id) })
}

var (
	configClass = regexp.MustCompile(`(?m)^class LlamaConfig\b`)
	loadWeights = regexp.MustCompile(`(?m)^def load_weights\(`)
)

// ReadFolder reads what folder dir (named name) says about itself. A folder
// without any of the files has no ids and is not Phase 0.
func ReadFolder(dir, name string) (Folder, error) {
	f := Folder{Name: name}
	files := []string{AdapterFile}
	inference, err := filepath.Glob(filepath.Join(dir, "*_inference.py"))
	if err != nil {
		return f, fmt.Errorf("listing %s: %w", dir, err)
	}
	slices.Sort(inference)
	for _, p := range inference[:min(len(inference), maxNamingFiles)] {
		files = append(files, filepath.Base(p))
	}
	var adapter []byte
	for _, rel := range files {
		b, err := boundedfile.Read(filepath.Join(dir, rel), maxFileBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return f, fmt.Errorf("reading %s: %w", filepath.Join(dir, rel), err)
		}
		if rel == AdapterFile {
			adapter = b
		}
		ids := HubIDs(b)
		if len(ids) > 0 {
			f.Files = append(f.Files, rel)
		}
		for _, id := range ids {
			if !f.Names(id) {
				f.IDs = append(f.IDs, id)
			}
		}
	}
	b, err := boundedfile.Read(filepath.Join(dir, name+"_weights.py"), maxFileBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return f, fmt.Errorf("reading %s: %w", filepath.Join(dir, name+"_weights.py"), err)
	default:
		f.Phase0 = configClass.Match(b) && loadWeights.Match(b)
		f.readQuantized(b, adapter)
	}
	return f, nil
}

// folders reads the tree at llms, bounded by maxFolders: its entries, and
// the names of the folders among them a scan reads (not hidden, not in
// skip), in order.
func folders(llms string, skip []string) ([]os.DirEntry, []string, error) {
	entries, err := os.ReadDir(llms)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the llms tree: %w", err)
	}
	if len(entries) > maxFolders {
		return nil, nil, fmt.Errorf("llms tree %s has %d entries, more than the %d a tree is expected to hold", llms, len(entries), maxFolders)
	}
	var names []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || slices.Contains(skip, strings.ToLower(name)) {
			continue
		}
		if st, err := os.Stat(filepath.Join(llms, name)); err != nil || !st.IsDir() {
			continue
		}
		names = append(names, name)
	}
	return entries, names, nil
}

// Scan reads every folder of the tree at llms that names at least one hub
// id, sorted by name. Hidden folders and those in skip are not read.
func Scan(llms string, skip []string) ([]Folder, error) {
	_, names, err := folders(llms, skip)
	if err != nil {
		return nil, err
	}
	var out []Folder
	for _, name := range names {
		f, err := ReadFolder(filepath.Join(llms, name), name)
		if err != nil {
			return nil, err
		}
		if len(f.IDs) > 0 {
			out = append(out, f)
		}
	}
	return out, nil
}

// ErrAmbiguous is wrapped when several Phase 0 folders name the same id.
var ErrAmbiguous = errors.New("several folders of the llms tree name this model")

// Lookup returns the Phase 0 folder among folders that names id, or "" when
// none does. Folders that name id without a Phase 0 module (a quantized
// packaging compared against the bf16 model) do not count.
func Lookup(folders []Folder, id string) (string, error) {
	var found []string
	for _, f := range folders {
		if f.Phase0 && f.Names(id) {
			found = append(found, f.Name)
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%w: %s all name %s in verify_adapter.py or *_inference.py; pass --name to pick one", ErrAmbiguous, strings.Join(found, ", "), id)
}
