package testenv

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"phase0/read/model"
)

// The family list lives in model/ (model.FamilyNames). The fixtures that
// cannot import it — the Python test-model builder, the wheel's pytest
// conftest — and the README are checked against it here, so a fifth family
// fails this test until each of them has it.

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return slices.Compact(s)
}

func readRepo(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot(), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var quoted = regexp.MustCompile(`"([a-z0-9_]+)"`)

// quotedIn is every "word" on the first line of text matching re.
func quotedIn(t *testing.T, rel, text string, re *regexp.Regexp) []string {
	t.Helper()
	line := re.FindString(text)
	if line == "" {
		t.Fatalf("%s: no line matching %s", rel, re)
	}
	var out []string
	for _, m := range quoted.FindAllStringSubmatch(line, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestFamilyListsAreModels(t *testing.T) {
	want := sorted(model.FamilyNames())

	const testmodels = "python/pyshim/phase0_testmodels/__init__.py"
	src := readRepo(t, testmodels)
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^Family = Literal\[.*\]$`),
		regexp.MustCompile(`(?m)^FAMILIES: .* = \(.*\)$`),
	} {
		if got := sorted(quotedIn(t, testmodels, src, re)); !slices.Equal(got, want) {
			t.Errorf("%s: %s lists %v; model.FamilyNames() is %v", testmodels, re, got, want)
		}
	}
	shapes := regexp.MustCompile(`(?m)^    "([a-z0-9]+)": FamilyShape\(`)
	var shaped []string
	for _, m := range shapes.FindAllStringSubmatch(src, -1) {
		shaped = append(shaped, m[1])
	}
	if got := sorted(shaped); !slices.Equal(got, want) {
		t.Errorf("%s: FamilyShape entries for %v; model.FamilyNames() is %v", testmodels, got, want)
	}

	const conftest = "cmd/pyext/tests/conftest.py"
	entry := regexp.MustCompile(`(?m)^    "[a-z0-9_-]+": \("([a-z0-9]+)", `)
	var fams []string
	for _, m := range entry.FindAllStringSubmatch(readRepo(t, conftest), -1) {
		fams = append(fams, m[1])
	}
	if got := sorted(fams); !slices.Equal(got, want) {
		t.Errorf("%s: MODELS covers families %v; model.FamilyNames() is %v", conftest, got, want)
	}

	var tiny []string
	for _, m := range Models {
		tiny = append(tiny, m.Family)
	}
	if got := sorted(tiny); !slices.Equal(got, want) {
		t.Errorf("testenv.Models covers families %v; model.FamilyNames() is %v", got, want)
	}

	// The README names every family by its title, and its architecture.
	readme := readRepo(t, "README.md")
	for _, name := range model.FamilyNames() {
		f, _ := model.FamilyNamed(name)
		if !strings.Contains(readme, f.Title()) {
			t.Errorf("README.md does not name the %s family (%q)", name, f.Title())
		}
	}
	gates := readRepo(t, "docs/gates.md")
	for _, arch := range model.SupportedArchitectures() {
		if !strings.Contains(gates, arch) && !strings.Contains(readme, arch) {
			t.Errorf("neither README.md nor docs/gates.md names %s", arch)
		}
	}
}
