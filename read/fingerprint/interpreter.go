package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Interpreter stamps a Python interpreter and what is installed beside it,
// without running it: a venv's python is <prefix>/bin/python and its
// packages are <prefix>/lib/python3.*/site-packages.
type Interpreter struct {
	Executable   string   `json:"executable"`
	File         File     `json:"interpreter"`
	PyvenvCfg    File     `json:"pyvenv_cfg"`
	SitePackages []string `json:"site_packages"`
	// Dists names every *.dist-info / *.egg-info (package and version) and
	// every .pth file of the site folders.
	Dists        []string `json:"dists"`
	Torch        string   `json:"torch"`
	Transformers string   `json:"transformers"`
}

// StampInterpreter stamps py. It fails when torch or transformers is not
// installed there: then it cannot tell whether the environment changed.
func StampInterpreter(py string) (Interpreter, error) {
	p := Interpreter{Executable: py, File: Stat(py, filepath.Base(py), -1), Dists: []string{}}
	prefix := filepath.Dir(filepath.Dir(py))
	p.PyvenvCfg = Stat(filepath.Join(prefix, "pyvenv.cfg"), "pyvenv.cfg", DefaultHashUpTo)
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

// Digest is one hash of the stamp (for the reference key).
func (p Interpreter) Digest() string {
	b, _ := json.Marshal(p) // strings and integers always encode
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
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
