// Package modellist reads the model arguments of a multi-model command:
// plain arguments and @FILE lists in the format of mlir-air's
// programming_examples/llms/hf_models.txt (one model per line — a hub id
// org/name[@revision], a local folder, or "default" — with blank lines,
// '#' comment lines and trailing " # comments" ignored).
package modellist

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"phase0/internal/boundedfile"
)

// MaxFileBytes bounds a list file. Upstream's is about 3 KB; a megabyte is
// thousands of models, far more than anyone triages at once.
const MaxFileBytes = 1 << 20

// ErrList marks a list that cannot be used; the message names file and line.
var ErrList = errors.New("bad model list")

// Entry is one model argument and where it came from.
type Entry struct {
	Arg    string // as written, without comment or surrounding blanks
	Source string // "argument 2" or "models.txt:14", for messages
}

// Expand turns command-line arguments into entries: "@FILE" is replaced by
// the models FILE lists, anything else is one model. Lists do not nest. A
// model listed twice (the same text, on two lines or as two arguments) is
// one entry, at its first place: it runs once, and has one JUnit case.
func Expand(args []string) ([]Entry, error) {
	entries, _, err := ExpandNoting(args)
	return entries, err
}

// ExpandNoting is Expand, and a note per model listed more than once, for
// the command to say that it runs once.
func ExpandNoting(args []string) ([]Entry, []string, error) {
	all, err := expand(args)
	if err != nil {
		return nil, nil, err
	}
	first := map[string]int{}
	var out []Entry
	var again [][]string
	for _, e := range all {
		if i, seen := first[e.Arg]; seen {
			again[i] = append(again[i], e.Source)
			continue
		}
		first[e.Arg] = len(out)
		out = append(out, e)
		again = append(again, nil)
	}
	var notes []string
	more := 0
	for i, e := range out {
		switch n := len(again[i]); {
		case n == 0:
		case len(notes) == maxNotes:
			more++
		case n <= maxPlaces:
			notes = append(notes, fmt.Sprintf("%s is listed again at %s: it runs once, as %s", boundedfile.Quote(e.Arg), strings.Join(again[i], ", "), e.Source))
		default:
			notes = append(notes, fmt.Sprintf("%s is listed again at %s and %d more places: it runs once, as %s", boundedfile.Quote(e.Arg), strings.Join(again[i][:maxPlaces], ", "), n-maxPlaces, e.Source))
		}
	}
	if more > 0 {
		notes = append(notes, fmt.Sprintf("%d more models are listed more than once: each runs once, at its first place", more))
	}
	return out, notes, nil
}

// maxPlaces and maxNotes bound the notes: 10,000 repeats of one line are
// one short note (its first places and a count), not a line of every place.
const maxPlaces, maxNotes = 3, 20

func expand(args []string) ([]Entry, error) {
	var out []Entry
	for i, a := range args {
		file, isList := strings.CutPrefix(a, "@")
		if !isList {
			out = append(out, Entry{Arg: a, Source: fmt.Sprintf("argument %d", i+1)})
			continue
		}
		if file == "" {
			return nil, fmt.Errorf("%w: argument %d is a bare '@'; write @FILE", ErrList, i+1)
		}
		if why := boundedfile.TooLong(fmt.Sprintf("argument %d", i+1), a); why != "" {
			return nil, fmt.Errorf("%w: %s", ErrList, why)
		}
		es, err := ReadFile(file)
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no models given", ErrList)
	}
	return out, nil
}

// ReadFile reads a list file: a regular file (a symlink to one is fine) of
// at most MaxFileBytes. An empty list is an error, since inspecting nothing
// is never what was meant.
func ReadFile(path string) ([]Entry, error) {
	data, err := boundedfile.Read(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrList, err)
	}
	es, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	if len(es) == 0 {
		return nil, fmt.Errorf("%w: %s lists no models (only blank lines and comments)", ErrList, path)
	}
	return es, nil
}

// Parse reads list text; name labels the entries' Source. A '#' starts a
// comment at the start of a line or after a blank, so a folder name with a
// '#' inside ("run#3") survives. A line written as a path (/…, ./…, ../…)
// is one model even when it holds blanks; any other line holding two words
// is refused rather than guessed at: upstream's format has one model per line.
func Parse(data []byte, name string) ([]Entry, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // editors on Windows add a BOM
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: %s is not UTF-8 text", ErrList, name)
	}
	var out []Entry
	for i, line := range strings.Split(string(data), "\n") {
		at := fmt.Sprintf("%s:%d", name, i+1)
		if strings.ContainsRune(line, 0) {
			return nil, fmt.Errorf("%w: %s: NUL byte: not a text file", ErrList, at)
		}
		line = stripComment(line)
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if why := boundedfile.TooLong(at+":", line); why != "" {
			return nil, fmt.Errorf("%w: %s", ErrList, why)
		}
		if j := strings.IndexFunc(line, unicode.IsSpace); j >= 0 && !isPath(line) {
			return nil, fmt.Errorf("%w: %s: %q holds more than one word; write one model per line (a folder whose path holds a blank: write it as /… or ./…)", ErrList, at, line)
		}
		if strings.HasPrefix(line, "@") {
			return nil, fmt.Errorf("%w: %s: %q: lists cannot include other lists", ErrList, at, line)
		}
		out = append(out, Entry{Arg: line, Source: at})
	}
	return out, nil
}

// isPath says whether a line is written as a folder's path (/…, ./…,
// ../…): it is one model, blanks and all ("./my models/tiny llama"); a hub
// id never holds a blank, so anything else with one is two words.
func isPath(line string) bool {
	return strings.HasPrefix(line, "/") || strings.HasPrefix(line, "./") || strings.HasPrefix(line, "../")
}

// stripComment drops a '#' comment that starts the line or follows a blank.
func stripComment(line string) string {
	for i := 0; i < len(line); i++ {
		if line[i] == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
			return line[:i]
		}
	}
	return line
}
