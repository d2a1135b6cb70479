package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeMaxLines keeps the README a page a newcomer reads in one sitting;
// everything else lives in docs/.
const readmeMaxLines = 250

func TestReadmeFitsOneSitting(t *testing.T) {
	readme := readDoc(t, "README.md")
	if n := strings.Count(readme, "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to a page in docs/ and link it", n, readmeMaxLines)
	}
}

// Every docs/ page is linked from the README.
func TestReadmeLinksEveryDocsPage(t *testing.T) {
	readme := readDoc(t, "README.md")
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		name := "docs/" + filepath.Base(p)
		if !strings.Contains(readme, "]("+name+")") {
			t.Errorf("README.md does not link %s", name)
		}
	}
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	mdFence   = regexp.MustCompile("(?ms)^```.*?^```")
)

// anchor is the GitHub anchor of a heading: lower case, punctuation but
// '-' and '_' dropped, spaces as '-'.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && r != '—' && r != '–' && r != '→' && r != '≤' && r != '≠':
			b.WriteRune(r)
		}
	}
	return b.String()
}

func anchors(doc string) map[string]bool {
	out := map[string]bool{}
	for _, m := range mdHeading.FindAllStringSubmatch(mdFence.ReplaceAllString(doc, ""), -1) {
		out[anchor(m[1])] = true
	}
	return out
}

// Every relative link of the README and of docs/*.md names a file that
// exists, and a #fragment names a heading of that page.
func TestDocsLinksResolve(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(repoRoot, "README.md"))
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		doc := mdFence.ReplaceAllString(string(b), "")
		rel, _ := filepath.Rel(repoRoot, page)
		for _, m := range mdLink.FindAllStringSubmatch(doc, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links %s: %v", rel, target, err)
				continue
			}
			if frag == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			tb, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(string(tb))[frag] {
				t.Errorf("%s links %s: %s has no heading with anchor #%s", rel, target, file, frag)
			}
		}
	}
}
