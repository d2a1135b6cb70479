package wire

// NoArgs is the argument of an op that takes none ({}).
type NoArgs struct{}

// NoResult is the result of an op that reports nothing ({}).
type NoResult struct{}

// Environment is what the worker runs on; empty strings for missing packages.
type Environment struct {
	Executable   string `json:"executable"`
	Version      string `json:"version"`
	Torch        string `json:"torch"`
	Transformers string `json:"transformers"`
	Safetensors  string `json:"safetensors"`
	NumPy        string `json:"numpy"`
}

// DownloadArgs names a hub model to fetch into the HF cache.
type DownloadArgs struct {
	RepoID   string  `json:"repo_id"`
	Revision *string `json:"revision"` // null: the default branch
	CacheDir string  `json:"cache_dir"`
}

// DownloadReport is the download's outcome; the expected failures are
// status "error" with a code, never an exception.
type DownloadReport struct {
	Status      string   `json:"status" py:"literal=ok|error"`
	Code        *string  `json:"code"`
	Message     string   `json:"message"`
	SnapshotDir *string  `json:"snapshot_dir"`
	Revision    *string  `json:"revision"`
	Bytes       int64    `json:"bytes"`
	Files       []string `json:"files"`
}

// DefaultModelArgs names phase0's cache folder.
type DefaultModelArgs struct {
	Cache string `json:"cache"`
}

// DefaultModelResult is the converted default model's folder and source.
type DefaultModelResult struct {
	Path    string            `json:"path"`
	Reused  bool              `json:"reused"`
	Seconds float64           `json:"seconds"`
	Stamp   DefaultModelStamp `json:"stamp"`
}

// DefaultModelStamp is what the default model's folder was built from.
type DefaultModelStamp struct {
	Requirement         string `json:"requirement"`
	Wheel               string `json:"wheel"`
	GGUFMember          string `json:"gguf_member"`
	GGUFSHA256          string `json:"gguf_sha256"`
	TransformersVersion string `json:"transformers_version"`
	Format              int    `json:"format"`
}

// Imports is what the worker reports about itself after a run (op
// python_sources): every module it imported (name, file, and a package's
// search folders), its sys.path, where its standard library lives and its
// site-packages folders. Python reports; read/fingerprint stamps.
type Imports struct {
	Modules  []ImportedModule `json:"modules"`
	SysPath  []string         `json:"sys_path"`
	Stdlib   []string         `json:"stdlib"`
	SiteDirs []string         `json:"site_dirs"`
}

// ImportedModule is one entry of sys.modules.
type ImportedModule struct {
	Name string `json:"name"`
	// File is the module's __file__ ("" for built-in and namespace modules).
	File string `json:"file"`
	// Search is a package's __path__: the folders its submodules were
	// looked up in (empty for a plain module).
	Search []string `json:"search"`
}

// ResetResult is reset_session's answer: the modules it forgot and the
// restored import path.
type ResetResult struct {
	Forgotten []string `json:"forgotten"`
	SysPath   []string `json:"sys_path"`
}
