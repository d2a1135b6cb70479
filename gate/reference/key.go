package reference

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"phase0/read/fingerprint"
)

// ModelFilesSHA256 fingerprints a checkpoint without reading its tensors:
// the digest of fingerprint.Tree over the whole model folder (size, mtime,
// ctime, inode, device and HF blob of every file; small files by content),
// the very stamps verdict reuse compares.
func ModelFilesSHA256(modelDir string) (string, error) {
	files, err := fingerprint.Tree(modelDir, fingerprint.TreeOptions{})
	if err != nil {
		return "", fmt.Errorf("fingerprinting the model folder: %w", err)
	}
	if !slices.ContainsFunc(files, func(f fingerprint.File) bool {
		return f.Name == "config.json" || strings.HasSuffix(f.Name, ".safetensors")
	}) {
		return "", fmt.Errorf("%s holds no config.json or *.safetensors to fingerprint", modelDir)
	}
	return fingerprint.Digest(files), nil
}

// Key is what a recording depends on: a re-run reuses a recording whose key
// is equal, and records anew otherwise.
type Key struct {
	Format              string   `json:"format"`
	ModelFilesSHA256    string   `json:"model_files_sha256"`
	TokenizerSHA256     string   `json:"tokenizer_sha256"`
	Prompts             []string `json:"prompts"`
	CanonicalPrompt     int      `json:"canonical_prompt"`
	Dtype               string   `json:"dtype"`
	DecodeSteps         int      `json:"decode_steps"`
	TopK                int      `json:"top_k"`
	Runner              string   `json:"runner"`
	TorchVersion        string   `json:"torch_version"`
	TransformersVersion string   `json:"transformers_version"`
	// InterpreterSHA256 is fingerprint.Interpreter's digest: the python, its
	// venv and every installed distribution.
	InterpreterSHA256 string `json:"interpreter_sha256"`
}

// SHA256 is the key's digest (of its JSON encoding).
func (k Key) SHA256() string {
	b, _ := json.Marshal(k) // a struct of strings and ints always encodes
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Diff names the fields where two keys differ, for the "recording anew because" line.
func (k Key) Diff(other Key) []string {
	var out []string
	add := func(field string, a, b any) {
		out = append(out, fmt.Sprintf("%s %v → %v", field, a, b))
	}
	if k.Format != other.Format {
		add("format", k.Format, other.Format)
	}
	if k.ModelFilesSHA256 != other.ModelFilesSHA256 {
		add("model files", short(k.ModelFilesSHA256), short(other.ModelFilesSHA256))
	}
	if k.TokenizerSHA256 != other.TokenizerSHA256 {
		add("tokenizer", short(k.TokenizerSHA256), short(other.TokenizerSHA256))
	}
	if !slices.Equal(k.Prompts, other.Prompts) || k.CanonicalPrompt != other.CanonicalPrompt {
		add("prompts", len(k.Prompts), len(other.Prompts))
	}
	if k.Dtype != other.Dtype {
		add("dtype", k.Dtype, other.Dtype)
	}
	if k.DecodeSteps != other.DecodeSteps || k.TopK != other.TopK {
		add("steps/top-k", fmt.Sprintf("%d/%d", k.DecodeSteps, k.TopK), fmt.Sprintf("%d/%d", other.DecodeSteps, other.TopK))
	}
	if k.Runner != other.Runner {
		add("runner", k.Runner, other.Runner)
	}
	if k.TorchVersion != other.TorchVersion || k.TransformersVersion != other.TransformersVersion {
		add("torch/transformers", k.TorchVersion+"/"+k.TransformersVersion, other.TorchVersion+"/"+other.TransformersVersion)
	}
	if k.InterpreterSHA256 != other.InterpreterSHA256 {
		add("python environment", short(k.InterpreterSHA256), short(other.InterpreterSHA256))
	}
	return out
}

func short(s string) string { return s[:min(12, len(s))] }
