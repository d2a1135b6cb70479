package quantfolder

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"phase0/gate/quant"
	"phase0/internal/boundedfile"
)

// Rope is where the folder's prefill and decode get their RoPE table, read
// from the folder's Python files as text: upstream's llama32_1b_q4nx builds
// it in a method with `from llama32_1b_weights import generate_rope_lut`
// (a bf16 folder's table), and its inference file with a function of its
// own whose θ is a default argument.
type Rope struct {
	// Borrowed are the modules of the tree whose generate_rope_lut a file
	// of the folder imports (at any indentation: inside a method too),
	// resolved to their files; File imports the first.
	Borrowed []string
	File     string
	// Theta are the θ defaults of the folder's own RoPE functions
	// (def _llama3_rope(…, theta=500000.0)), keyed "fn(theta)", and the
	// file of each.
	Theta      map[string]float64
	ThetaFiles map[string]string
	// Unjudged say which RoPE tables of the folder phase0 could not find or
	// judge: an import it could not resolve, a function of the folder's own
	// that builds a table with no θ to check.
	Unjudged []string
}

var (
	ropeImport = regexp.MustCompile(`(?m)^[ \t]*from[ \t]+([A-Za-z_][\w.]*)[ \t]+import[ \t]+\(?([^)\n]*(?:\n[^)\n]*){0,8})`)
	ropeDef    = regexp.MustCompile(`(?m)^[ \t]*def[ \t]+(\w*rope\w*)[ \t]*\(([^)]*)\)`)
	thetaArg   = regexp.MustCompile(`\btheta\s*(?::\s*\w+\s*)?=\s*([0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?)`)
	lutName    = regexp.MustCompile(`\bgenerate_rope_lut\b`)
)

// RopeTables reads the folder's Python files (the weights module too) for
// the RoPE tables they use; llms is the tree the imports resolve in.
func (q *Folder) RopeTables(llms string) *Rope {
	r := &Rope{Theta: map[string]float64{}, ThetaFiles: map[string]string{}}
	files, _ := filepath.Glob(filepath.Join(q.Dir, "*.py"))
	slices.Sort(files)
	for _, f := range files {
		src, err := boundedfile.Read(f, MaxTextBytes)
		if err != nil {
			continue
		}
		base := filepath.Base(f)
		for _, m := range ropeImport.FindAllSubmatch(src, -1) {
			if !lutName.Match(m[2]) {
				continue
			}
			mod := string(m[1])
			path := resolveModule(llms, q.Dir, mod)
			switch {
			case path == "":
				r.Unjudged = append(r.Unjudged, fmt.Sprintf("%s imports generate_rope_lut from %s, which is not a module of the tree", base, mod))
			case !slices.Contains(r.Borrowed, path):
				if len(r.Borrowed) == 0 {
					r.File = base
				}
				r.Borrowed = append(r.Borrowed, path)
			}
		}
		for _, m := range ropeDef.FindAllSubmatch(src, -1) {
			name := string(m[1])
			if name == "generate_rope_lut" || strings.HasPrefix(name, "test") {
				continue
			}
			if t := thetaArg.FindSubmatch(m[2]); t != nil {
				if v, err := strconv.ParseFloat(strings.ReplaceAll(string(t[1]), "_", ""), 64); err == nil {
					key := name + "(theta)"
					r.Theta[key], r.ThetaFiles[key] = v, base
				}
				continue
			}
			r.Unjudged = append(r.Unjudged, fmt.Sprintf("%s defines %s(), a RoPE table of its own with no θ default to check", base, name))
		}
	}
	return r
}

// resolveModule finds the file of module mod as a folder of the tree
// imports it by bare name: its own folder first, then each folder of llms.
func resolveModule(llms, own, mod string) string {
	rel := strings.ReplaceAll(mod, ".", string(filepath.Separator)) + ".py"
	if fi, err := os.Stat(filepath.Join(own, rel)); err == nil && fi.Mode().IsRegular() {
		return filepath.Join(own, rel)
	}
	matches, _ := filepath.Glob(filepath.Join(llms, "*", rel))
	slices.Sort(matches)
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() {
			return m
		}
	}
	return ""
}

// AddTheta adds the θ defaults of the folder's own RoPE functions to a
// module's constants, each with its file (for quant.CheckConstantsFrom).
func (r *Rope) AddTheta(consts map[string]float64, files map[string]string) {
	for k, v := range r.Theta {
		consts[k], files[k] = v, r.ThetaFiles[k]
	}
}

// JudgedFrom is the module whose RoPE table quantized gate 3 judges when
// it is not the weights module's own ("": the module's own, when it
// defines one): the generate_rope_lut a file of the folder imports (what
// the prefill really runs) wins, else that of the module the config class
// comes from (ropeModule, the worker's answer).
func (r *Rope) JudgedFrom(module string, moduleLUT bool, ropeModule string) string {
	switch {
	case len(r.Borrowed) > 0 && r.Borrowed[0] != module:
		return r.Borrowed[0]
	case !moduleLUT:
		return ropeModule
	}
	return ""
}

// FamilyJudged records that a deployed family's facts judged the tables of
// module (the weights module): none of the folder's own is left unjudged,
// and a file that imports module's generate_rope_lut (Phi-4-mini's prefill
// does) uses a judged table. A table borrowed from another module stays.
func (r *Rope) FamilyJudged(module string) {
	r.Unjudged = nil
	r.Borrowed = slices.DeleteFunc(r.Borrowed, func(p string) bool { return filepath.Clean(p) == filepath.Clean(module) })
}

// Warn adds to gate 3 a WARN for each RoPE table phase0 did not judge:
// those RopeTables could not, and a borrowed one left unjudged (judged:
// whether gate 3 judged a table by behaviour).
func (r *Rope) Warn(c *quant.Constants, judged bool) {
	for _, u := range r.Unjudged {
		c.Warn("%s: not judged", u)
	}
	if len(r.Borrowed) > 0 && !judged {
		c.Warn("%s uses the RoPE table of %s, which could not be judged (Python is not ready)", r.File, r.Borrowed[0])
	}
}
