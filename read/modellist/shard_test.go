package modellist

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"phase0/internal/testenv"
)

// hfModels is a 30-line list in the shape of mlir-air's hf_models.txt.
func hfModels(n int) []Entry {
	ids := []string{
		"meta-llama/Llama-3.2-1B", "meta-llama/Llama-3.2-1B-Instruct", "meta-llama/Llama-3.2-3B",
		"meta-llama/Llama-3.2-3B-Instruct", "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct",
		"Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-1.5B", "Qwen/Qwen2.5-1.5B-Instruct",
		"Qwen/Qwen2.5-3B", "Qwen/Qwen2.5-3B-Instruct", "Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B-Instruct",
		"Qwen/Qwen3-0.6B", "Qwen/Qwen3-1.7B", "Qwen/Qwen3-4B", "Qwen/Qwen3-8B",
		"HuggingFaceTB/SmolLM2-135M", "HuggingFaceTB/SmolLM2-135M-Instruct", "HuggingFaceTB/SmolLM2-1.7B",
		"HuggingFaceTB/SmolLM2-1.7B-Instruct", "amd/Llama-3.2-1B-Instruct-awq-uint4-asym-g128-bf16-lmhead",
		"FastFlowLM/Llama-3.2-1B-NPU2", "FastFlowLM/Llama-3.2-3B-NPU2", "FastFlowLM/Llama-3.1-8B-NPU2",
		"FastFlowLM/Qwen3-8B-NPU2", "google/gemma-3-4b-it", "microsoft/Phi-4-mini-instruct", "lerobot/smolvla_base",
	}
	var out []Entry
	for i := range n {
		id := ids[i%len(ids)]
		if i >= len(ids) {
			id = fmt.Sprintf("org/appended-%d", i)
		}
		out = append(out, Entry{Arg: id, Source: fmt.Sprintf("hf_models.txt:%d", i+1)})
	}
	return out
}

// The N shards of a 30-line list partition it exactly: every line in one
// shard, none in two, each shard in list order.
func TestShardsPartitionTheList(t *testing.T) {
	list := hfModels(30)
	for _, n := range []int{1, 2, 3, 4, 7, 30, 31} {
		var union []Entry
		for i := 1; i <= n; i++ {
			part := Shard{i, n}.Select(list)
			for j := 1; j < len(part); j++ {
				if slices.Index(list, part[j-1]) > slices.Index(list, part[j]) {
					t.Errorf("shard %d/%d is out of list order: %v", i, n, part)
				}
			}
			union = append(union, part...)
		}
		if len(union) != len(list) {
			t.Errorf("%d shards hold %d entries, the list %d", n, len(union), len(list))
		}
		for _, e := range list {
			if c := slices.Index(union, e); c < 0 {
				t.Errorf("%d shards: %s is in none", n, e.Source)
			}
		}
	}
}

// Appending lines (or inserting them above) never moves a model to another
// shard: its shard depends on its own line alone.
func TestShardStableWhenLinesAreAdded(t *testing.T) {
	before, after := hfModels(30), hfModels(45)
	inserted := append([]Entry{{Arg: "org/new-first", Source: "x:1"}}, before...)
	for _, e := range before {
		for _, grown := range [][]Entry{after, inserted} {
			i := slices.IndexFunc(grown, func(g Entry) bool { return g.Arg == e.Arg })
			if Of(grown[i], 4) != Of(e, 4) {
				t.Errorf("%s moved from shard %d to %d when lines were added", e.Arg, Of(e, 4), Of(grown[i], 4))
			}
		}
	}
	// The 4 shards of hf_models.txt each get some of it.
	for i := 1; i <= 4; i++ {
		if len(Shard{i, 4}.Select(before)) == 0 {
			t.Errorf("shard %d/4 of the 30-line list is empty", i)
		}
	}
}

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{"2/4", "2/4", ""},
		{"1/1", "1/1", ""},
		{"1024/1024", "1024/1024", ""},
		{"0/4", "", "I is 0, want 1 to N (4)"},
		{"5/4", "", "I is 5, want 1 to N (4)"},
		{"1/0", "", "N is 0, want 1 to 1024"},
		{"1/1025", "", "N is 1025, want 1 to 1024"},
		{"2", "", "want I/N"},
		{"", "", "want I/N"},
		{"1.5/4", "", "base-10 integers"},
		{"0x1/4", "", "base-10 integers"},
		{"+1/4", "", "base-10 integers"},
		{"1/4/2", "", "base-10 integers"},
		{" 1/4", "", "base-10 integers"},
		{"01/4", "", "base-10 integers"},
		{"1/04", "", "base-10 integers"},
		{"-0/4", "", "base-10 integers"},
		{"-1/4", "", "I is -1"},
	} {
		s, err := ParseShard(tc.in)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("ParseShard(%q): %v", tc.in, err)
		case tc.err == "" && s.String() != tc.want:
			t.Errorf("ParseShard(%q) = %s, want %s", tc.in, s, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseShard(%q) error = %v, want one containing %q", tc.in, err, tc.err)
		}
	}
}

// docs/fleets.md's shard numbers are those of upstream's own hf_models.txt
// (testdata/hf_models.txt: mlir-air's programming_examples/llms/hf_models.txt
// at e972f2942, 30 models), not of a list made up in its shape.
func TestFleetsDocShardNumbers(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "fleets.md"))
	if err != nil {
		t.Fatal(err)
	}
	list, err := ReadFile(filepath.Join("testdata", "hf_models.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 30 {
		t.Fatalf("testdata/hf_models.txt lists %d models, the docs say 30", len(list))
	}
	text := strings.Join(strings.Fields(string(doc)), " ")
	var sizes []string
	for i := 1; i <= 4; i++ {
		sizes = append(sizes, strconv.Itoa(len(Shard{i, 4}.Select(list))))
	}
	split := fmt.Sprintf("upstream's hf_models.txt (30 models) split 4 ways gives shards of %s, %s, %s and %s", sizes[0], sizes[1], sizes[2], sizes[3])
	if !strings.Contains(text, split) {
		t.Errorf("docs/fleets.md does not say %q", split)
	}
	m := regexp.MustCompile(`shard (\d)/4: (\d+) of 30 models`).FindAllStringSubmatch(text, -1)
	if len(m) == 0 {
		t.Fatal("docs/fleets.md shows no shard line")
	}
	for _, line := range m {
		i, _ := strconv.Atoi(line[1])
		if line[2] != sizes[i-1] {
			t.Errorf("docs/fleets.md shows %q; shard %d/4 of the list holds %s models", line[0], i, sizes[i-1])
		}
	}
}
