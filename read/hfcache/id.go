// Package hfcache resolves a HuggingFace model id to a folder in the local
// HuggingFace hub cache, natively and offline, reading the cache exactly as
// huggingface_hub lays it out (models--org--name/{refs,snapshots,blobs}).
package hfcache

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidID reports a model id that huggingface_hub itself would reject.
var ErrInvalidID = errors.New("invalid model id")

// maxNameLen is huggingface_hub's limit on the repo-name part of an id.
const maxNameLen = 96

// Ref names a model repository and, optionally, a revision in it.
// Org is empty for legacy ids without a namespace (e.g. "gpt2").
type Ref struct {
	ID       string // "org/name" or "name", without the revision
	Org      string
	Name     string
	Revision string // branch, tag or commit sha; empty means "main"
}

// String gives the id back in the "org/name[@revision]" form ParseID reads.
func (r Ref) String() string {
	if r.Revision == "" {
		return r.ID
	}
	return r.ID + "@" + r.Revision
}

// FolderName is the repository's folder in the hub cache, as huggingface_hub
// names it: "models--" followed by the id with "/" replaced by "--".
func (r Ref) FolderName() string {
	return "models--" + strings.ReplaceAll(r.ID, "/", "--")
}

// ParseID reads "org/name[@revision]". The id part is validated with
// huggingface_hub's rules (validate_repo_id): at most one "/", characters
// [A-Za-z0-9_.-], each part starting and ending with a letter, digit or "_",
// a name of 1..96 characters, no "--" or "..", no ".git" suffix. The Hub only
// issues ASCII names, so the check is ASCII where Python's \w is Unicode.
// The revision follows git's ref-name rules, which also keeps it inside the
// cache's refs/ folder.
func ParseID(s string) (Ref, error) {
	id, rev, hasRev := strings.Cut(s, "@")
	if hasRev {
		if err := checkRevision(rev); err != nil {
			return Ref{}, fmt.Errorf("%w %q: %w", ErrInvalidID, s, err)
		}
	}
	org, name, err := splitRepoID(id)
	if err != nil {
		return Ref{}, fmt.Errorf("%w %q: %w", ErrInvalidID, s, err)
	}
	return Ref{ID: id, Org: org, Name: name, Revision: rev}, nil
}

func splitRepoID(id string) (org, name string, err error) {
	if id == "" {
		return "", "", errors.New("empty repo id, want \"org/name\"")
	}
	if n := strings.Count(id, "/"); n > 1 {
		return "", "", fmt.Errorf("repo id has %d '/', want the form \"name\" or \"org/name\"", n)
	}
	org, name, hasOrg := strings.Cut(id, "/")
	if !hasOrg {
		org, name = "", id
	}
	if hasOrg {
		if err := checkPart("namespace", org, 0); err != nil {
			return "", "", err
		}
	}
	if err := checkPart("name", name, maxNameLen); err != nil {
		return "", "", err
	}
	if strings.Contains(id, "--") || strings.Contains(id, "..") {
		return "", "", errors.New("repo id cannot contain \"--\" or \"..\"")
	}
	if strings.HasSuffix(id, ".git") {
		return "", "", errors.New("repo id cannot end with \".git\"")
	}
	return org, name, nil
}

// checkPart applies the REPO_ID_REGEX rules to one part; maxLen 0 means no limit.
func checkPart(what, s string, maxLen int) error {
	if s == "" {
		return fmt.Errorf("empty %s", what)
	}
	if maxLen > 0 && len(s) > maxLen {
		return fmt.Errorf("%s is %d characters long, the maximum is %d", what, len(s), maxLen)
	}
	// By rune, so a non-ASCII character is named as itself, not as the
	// first byte of its UTF-8 encoding.
	for i, r := range s {
		if r >= 0x80 || !isWordChar(byte(r)) && r != '-' && r != '.' {
			return fmt.Errorf("%s %q has character %q at byte offset %d; allowed are ASCII letters, digits, '-', '_' and '.'", what, s, r, i)
		}
	}
	if !isWordChar(s[0]) || !isWordChar(s[len(s)-1]) {
		return fmt.Errorf("%s %q must start and end with a letter, digit or '_'", what, s)
	}
	return nil
}

func isWordChar(c byte) bool {
	return c == '_' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// checkRevision follows git check-ref-format, which is what the Hub accepts
// for branch and tag names; it also rules out anything that could leave the
// cache's refs/ folder.
func checkRevision(rev string) error {
	switch {
	case rev == "":
		return errors.New("empty revision after '@'")
	case strings.HasPrefix(rev, "/") || strings.HasSuffix(rev, "/"):
		return fmt.Errorf("revision %q cannot start or end with '/'", rev)
	case strings.HasSuffix(rev, ".") || strings.HasSuffix(rev, ".lock"):
		return fmt.Errorf("revision %q cannot end with '.' or \".lock\"", rev)
	case strings.Contains(rev, "..") || strings.Contains(rev, "//") || strings.Contains(rev, "@{"):
		return fmt.Errorf("revision %q cannot contain \"..\", \"//\" or \"@{\"", rev)
	}
	for _, part := range strings.Split(rev, "/") {
		if strings.HasPrefix(part, ".") {
			return fmt.Errorf("revision %q has a component starting with '.'", rev)
		}
	}
	for i := 0; i < len(rev); i++ {
		c := rev[i]
		if c <= ' ' || c == 0x7f || strings.IndexByte(`~^:?*[\`, c) >= 0 {
			return fmt.Errorf("revision %q has forbidden character %q at offset %d", rev, c, i)
		}
	}
	return nil
}
