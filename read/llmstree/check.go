package llmstree

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"phase0/internal/pyimport"
)

// treeParts are what Phase 0 takes from an mlir-air llms tree: the
// reference runner and the canonical prompts.
var treeParts = []struct {
	rel string
	dir bool
}{
	{"verify/runners/hf_runner.py", false},
	{"verify/prompts", true},
}

// CheckTree names every missing part of the tree at llms, with a hint when
// the folder holds the tree one or two levels down (the repository root);
// a tree with every part must have readable prompt files (CheckPrompts).
func CheckTree(llms string) error {
	var missing []string
	for _, p := range treeParts {
		full := filepath.Join(llms, filepath.FromSlash(p.rel))
		st, err := os.Stat(full)
		switch {
		case err != nil:
			missing = append(missing, full)
		case p.dir && !st.IsDir():
			missing = append(missing, full+" (not a folder)")
		case !p.dir && !st.Mode().IsRegular():
			missing = append(missing, full+" (not a regular file)")
		}
	}
	if len(missing) == 0 {
		return CheckPrompts(llms)
	}
	hint := "pass the programming_examples/llms folder of your mlir-air checkout, or omit --llms-dir to use the bundled runner and ./workspace"
	for _, sub := range []string{"programming_examples/llms", "llms"} {
		cand := filepath.Join(llms, filepath.FromSlash(sub))
		if _, err := os.Stat(filepath.Join(cand, "verify", "runners", "hf_runner.py")); err == nil {
			hint = "did you mean --llms-dir " + cand + "?"
			break
		}
	}
	return fmt.Errorf("--llms-dir %s is not an mlir-air programming_examples/llms tree: missing %s; %s", llms, strings.Join(missing, ", "), hint)
}

// RunnerShadow fails when `runners` or `runners.hf_runner` would resolve to
// anything but <llms>/verify/runners/hf_runner.py, the runner upstream's
// README names. The worker puts <llms> and then <llms>/verify first on
// sys.path (hf_runner.py imports `runners._records`; the tree's own scripts
// import `verify.…`), so a `runners` module or package at the tree's root,
// in any form Python imports (.py, .pyc, an extension, a package whose
// __init__ is any of those, or a namespace folder merged before verify's),
// would be imported instead. The worker imports the runner by path anyway;
// a tree where the plain import means another file is refused, naming both,
// so that no script of the tree silently runs the other one either.
func RunnerShadow(llms string) error {
	verify := filepath.Join(llms, "verify")
	runners := filepath.Join(verify, "runners")
	want := filepath.Join(runners, "hf_runner.py")
	verifyIsPackage := pyimport.Init(runners) != ""
	for _, f := range pyimport.Lookup(llms, "runners") {
		if f.Kind == pyimport.Namespace && verifyIsPackage {
			continue // a regular package later on the path wins over a namespace folder
		}
		return fmt.Errorf("`import runners` in %s resolves to the %s %s, not %s (the runner upstream's README names): rename or remove %s", llms, f.Kind, f.Path, want, f.Path)
	}
	if found := pyimport.Lookup(verify, "runners"); len(found) == 0 || found[0].Path != runners {
		first := "nothing"
		if len(found) > 0 {
			first = fmt.Sprintf("the %s %s", found[0].Kind, found[0].Path)
		}
		return fmt.Errorf("`import runners` in %s resolves to %s, not %s: rename or remove it", verify, first, runners)
	}
	if found := pyimport.Lookup(runners, "hf_runner"); len(found) == 0 || found[0].Path != want {
		first := "nothing"
		if len(found) > 0 {
			first = fmt.Sprintf("the %s %s", found[0].Kind, found[0].Path)
		}
		return fmt.Errorf("`import runners.hf_runner` resolves to %s, not %s: rename or remove it", first, want)
	}
	return nil
}
