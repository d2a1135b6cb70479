package modellist

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// listFixture is written in hf_models.txt's format (header comment block,
// blank lines, comment paragraphs between groups), with our own content.
const listFixture = `# Candidates for the NPU2 bring-up, reviewed weekly.
# One model per line; blank lines and '#' comments are ignored.

meta-llama/Llama-3.2-1B
Qwen/Qwen3-0.6B@main

# Local conversions live next to the checkout.
./models/qwen2.5-0.5b
default

# A MoE we expect to be refused.
mistralai/Mixtral-8x7B-v0.1
`

func TestParse(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string
		err      string
	}{
		{name: "format fixture", in: listFixture, want: []string{"meta-llama/Llama-3.2-1B", "Qwen/Qwen3-0.6B@main", "./models/qwen2.5-0.5b", "default", "mistralai/Mixtral-8x7B-v0.1"}},
		{name: "inline comment", in: "Qwen/Qwen3-0.6B  # the small one\n", want: []string{"Qwen/Qwen3-0.6B"}},
		{name: "tab before comment", in: "Qwen/Qwen3-0.6B\t# x", want: []string{"Qwen/Qwen3-0.6B"}},
		{name: "hash inside a folder name", in: "/data/run#3\n", want: []string{"/data/run#3"}},
		{name: "indented comment", in: "   # only a comment\n", want: nil},
		{name: "CRLF and BOM", in: "\xef\xbb\xbfa/b\r\nc/d\r\n", want: []string{"a/b", "c/d"}},
		{name: "no trailing newline", in: "a/b", want: []string{"a/b"}},
		{name: "surrounding blanks", in: "  \t a/b \t \n", want: []string{"a/b"}},
		{name: "duplicates kept in order", in: "a/b\nc/d\na/b\n", want: []string{"a/b", "c/d", "a/b"}},
		{name: "empty", in: "", want: nil},
		{name: "two words", in: "a/b c/d\n", err: "x.txt:1: \"a/b c/d\" holds more than one word"},
		{name: "two words, not a path", in: "my models/tiny llama\n", err: "write it as /… or ./…"},
		{name: "a path with blanks", in: "/data/my models/tiny llama\n./run 2/ckpt # the second\n../a\tb\n",
			want: []string{"/data/my models/tiny llama", "./run 2/ckpt", "../a\tb"}},
		{name: "nested list", in: "\n@other.txt\n", err: "x.txt:2: \"@other.txt\": lists cannot include other lists"},
		{name: "binary", in: "a/b\x00\n", err: "NUL byte"},
		{name: "not utf-8", in: "a/\xff\n", err: "not UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			es, err := Parse([]byte(tc.in), "x.txt")
			if tc.err != "" {
				if !errors.Is(err, ErrList) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an ErrList containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range es {
				got = append(got, e.Arg)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSourceNamesLine(t *testing.T) {
	es, err := Parse([]byte(listFixture), "cands.txt")
	if err != nil {
		t.Fatal(err)
	}
	if es[2].Source != "cands.txt:8" {
		t.Errorf("source %q, want cands.txt:8", es[2].Source)
	}
}

func TestExpand(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "models.txt")
	if err := os.WriteFile(list, []byte(listFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	es, err := Expand([]string{"org/first", "@" + list, "org/last"})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 7 || es[0] != (Entry{"org/first", "argument 1"}) || es[6] != (Entry{"org/last", "argument 3"}) || es[1].Source != list+":4" {
		t.Errorf("got %+v", es)
	}

	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, []byte("# nothing yet\n\n"), 0o644)
	big := filepath.Join(dir, "big.txt")
	os.WriteFile(big, []byte(strings.Repeat("a/b\n", MaxFileBytes/4+1)), 0o644)
	link := filepath.Join(dir, "link.txt")
	os.Symlink(list, link)
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{nil, "no models given"},
		{[]string{"@"}, "bare '@'"},
		{[]string{"@" + filepath.Join(dir, "missing.txt")}, "no such file"},
		{[]string{"@" + dir}, "not a regular file"},
		{[]string{"@" + empty}, "lists no models"},
		{[]string{"@" + big}, "larger than"},
	} {
		if _, err := Expand(tc.args); !errors.Is(err, ErrList) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: got %v, want %q", tc.args, err, tc.err)
		}
	}
	if es, err := Expand([]string{"@" + link}); err != nil || len(es) != 5 {
		t.Errorf("symlink to a list: %d entries, %v", len(es), err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(listFixture))
	f.Add([]byte("a/b # c\r\n\xef\xbb\xbf#x\n@y"))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := Parse(data, "f")
		if err != nil {
			return
		}
		for _, e := range es {
			if e.Arg == "" || strings.ContainsAny(e.Arg, " \t\r\n\x00") || strings.HasPrefix(e.Arg, "#") || strings.HasPrefix(e.Arg, "@") {
				t.Errorf("bad entry %q from %q", e.Arg, data)
			}
		}
	})
}

// A model listed twice runs once, at its first place, and the command is
// told so (issue 36 item 12: it ran twice and gave two JUnit cases of one
// name).
func TestExpandListsAModelOnce(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "hf_models.txt")
	if err := os.WriteFile(list, []byte("Qwen/Qwen3-0.6B\norg/b\n# again\nQwen/Qwen3-0.6B  # a second time\norg/c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	entries, notes, err := ExpandNoting([]string{"@" + list, "org/c", "org/d"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Arg+"@"+filepath.Base(e.Source))
	}
	want := []string{"Qwen/Qwen3-0.6B@hf_models.txt:1", "org/b@hf_models.txt:2", "org/c@hf_models.txt:5", "org/d@argument 3"}
	if !slices.Equal(got, want) {
		t.Errorf("entries %v, want %v", got, want)
	}
	if len(notes) != 2 || !strings.Contains(notes[0], `"Qwen/Qwen3-0.6B" is listed again at `+list+":4: it runs once, as "+list+":1") ||
		!strings.Contains(notes[1], `"org/c" is listed again at argument 2`) {
		t.Errorf("notes %q", notes)
	}
	// Many repeats are summarized: the first places and a count (issue 49
	// item 9: 10,000 repeats gave one 349 KB line), many repeated models
	// a count after the first notes.
	many := filepath.Join(t.TempDir(), "many.txt")
	os.WriteFile(many, []byte(strings.Repeat("org/dup\n", 10000)+strings.Repeat("org/x\norg/x\n", 1)), 0o644)
	var lines []string
	for i := range 100 {
		lines = append(lines, fmt.Sprintf("org/m%d\norg/m%d", i, i))
	}
	os.WriteFile(many+"2", []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	_, notes, err = ExpandNoting([]string{"@" + many, "@" + many + "2"})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range notes {
		total += len(n)
	}
	if len(notes) != 21 || !strings.Contains(notes[0], `"org/dup" is listed again at `+many+":2, "+many+":3, "+many+":4 and 9996 more places: it runs once") ||
		!strings.Contains(notes[20], "82 more models are listed more than once") || total > 8000 {
		t.Errorf("%d notes, %d bytes: %q …", len(notes), total, notes[:min(len(notes), 2)])
	}
	if plain, _ := Expand([]string{"@" + list}); len(plain) != 3 {
		t.Errorf("Expand: %d entries, want 3", len(plain))
	}
}
