package report

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"phase0/gate/config"
	"phase0/gate/quant"
	"phase0/gate/verdict"
	"phase0/gate/weights"
	"phase0/read/model"
)

// offlineFleet is hf_models.txt on an offline machine that holds 6 of its
// 30 models: 24 rows end in the same "not in the cache" error.
func offlineFleet() []ListRow {
	const list = "/home/ci/src/mlir-air/programming_examples/llms/hf_models.txt"
	var rows []ListRow
	add := func(r *Report) {
		rows = append(rows, ListRow{Report: r, ListedAt: fmt.Sprintf("%s:%d", list, len(rows)+3)})
	}
	pass := func(id, folder string) *Report {
		return &Report{Model: id, Status: verdict.Pass, Seconds: 17.2, Config: &model.Config{},
			Workspace: &Workspace{Name: folder, Mode: ModeValidatedExisting},
			Gates:     Gates{Weights: &weights.Result{Section: verdict.Section{Status: verdict.Pass}}, PyWeights: &weights.Loader{Section: verdict.Section{Status: verdict.Pass}}, ConfigConsistency: &config.Consistency{Section: verdict.Section{Status: verdict.Pass}}},
			Reference: &Reference{Section: verdict.Section{Status: verdict.Pass}}}
	}
	add(pass("Qwen/Qwen3-0.6B", "qwen3_0_6b"))
	reused := pass("Qwen/Qwen2.5-0.5B-Instruct", "qwen25_0_5b")
	reused.ReusedFrom = &ReusedFrom{Path: "/x/report.json", Recorded: time.Now()}
	add(reused)
	fail := pass("meta-llama/Llama-3.2-1B", "llama32_1b")
	fail.Status = verdict.Fail
	fail.Gates.ConfigConsistency.Status = verdict.Fail
	fail.Gates.ConfigConsistency.Summary = "38 checks, 1 mismatches (weights, module_config, transformers, behaviour)"
	add(fail)
	for i := range 24 {
		id := fmt.Sprintf("SomeOrganisation/A-Rather-Long-Model-Name-%02d-Instruct", i)
		add(&Report{Model: id, Status: verdict.Error, Seconds: 0.1,
			Error: "model not available from the hub: " + id + " is not in the cache (/root/.cache/huggingface/hub) and the hub is switched off (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE); download it first or unset them"})
	}
	add(&Report{Model: "amd/Llama-3.2-1B-Instruct-awq-uint4-asym-g128-bf16-lmhead", Status: verdict.Rejected, Seconds: 0.1,
		Rejections: []model.Rejection{{Code: "quantized", Message: `config.json has quantization_config (quant_method "awq"): a quantized packaging holds packed integer weights and scales, not the bf16 checkpoint Phase 0 validates and HfRunner loads; run Phase 0 on its bf16 source`}}})
	for _, id := range []string{"google/gemma-3-4b-it", "HuggingFaceTB/SmolVLM2-500M-Video-Instruct"} {
		add(&Report{Model: id, Status: verdict.Rejected, Seconds: 0.1,
			Rejections: []model.Rejection{{Code: "unsupported_architecture", Message: "architecture X is not supported; supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM"}}})
	}
	return rows
}

// The table fits a 120-column terminal, whatever the names.
func TestRunListTableFits120Columns(t *testing.T) {
	rows := offlineFleet()
	text := RunListText(rows, ListTotals{Status: verdict.Error, Seconds: 1234.5, Shard: "2/4", Listed: 120})
	for i, line := range strings.Split(text, "\n") {
		if n := utf8.RuneCountInString(line); n > TableWidth {
			t.Errorf("line %d is %d columns, more than %d:\n%s", i+1, n, TableWidth, line)
		}
	}
	for _, want := range []string{"shard 2/4: 30 of 120 models", "MODEL", "ARCH", "WTS", "CFG", "VERDICT", "gate 3", "val reused",
		"amd/Llama-3.2-1B-I…ym-g128-bf16-lmhead", "30 model(s) in 1234.5s: ERROR (2 PASS, 1 FAIL, 3 REJECTED, 24 ERROR)"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	if t.Failed() {
		t.Log("\n" + text)
	}
}

// Rows that share a cause are said once: the 24 missing models in one
// entry with the one command that fetches exactly them, never the list
// file's folders once per row.
func TestRunListCausesSaidOnce(t *testing.T) {
	rows := offlineFleet()
	text := Causes(rows)
	if n := strings.Count(text, "is not in the cache"); n != 0 {
		t.Errorf("the offline error is repeated per row (%d times):\n%s", n, text)
	}
	if !strings.Contains(text, "24 models ERROR: not in the HF cache (/root/.cache/huggingface/hub) while the hub is off") {
		t.Errorf("no one-line summary of the 24 missing models:\n%s", text)
	}
	// The fetch command names exactly the 24 ids, each once.
	cmd := text[strings.Index(text, "  for id in"):]
	cmd = cmd[:strings.Index(cmd, "done")]
	for _, r := range rows {
		n := strings.Count(cmd, r.Report.Model+" ") + strings.Count(cmd, r.Report.Model+";")
		if want := map[bool]int{true: 1, false: 0}[r.Report.Status == verdict.Error]; n != want {
			t.Errorf("the fetch command names %s %d times, want %d:\n%s", r.Report.Model, n, want, cmd)
		}
	}
	if !strings.Contains(cmd, "HF_HUB_OFFLINE=0 hf download \"$id\"") {
		t.Errorf("not a download command:\n%s", cmd)
	}
	if strings.Contains(text, "/home/ci/src") {
		t.Errorf("the causes name the list file's folders:\n%s", text)
	}
	for _, want := range []string{
		"meta-llama/Llama-3.2-1B (hf_models.txt:5): FAIL config consistency: 38 checks",
		"amd/Llama-3.2-1B-Instruct-awq-uint4-asym-g128-bf16-lmhead (hf_models.txt:30): REJECTED [quantized]",
		"2 models REJECTED: [unsupported_architecture] architecture X is not supported",
		"    google/gemma-3-4b-it HuggingFaceTB/SmolVLM2-500M-Video-Instruct",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("causes lack %q:\n%s", want, text)
		}
	}
	if rest := strings.Replace(text, cmd, "", 1); strings.Count(rest, "\n") > 13 {
		t.Errorf("%d lines of causes besides the fetch command, for 4 causes:\n%s", strings.Count(rest, "\n"), text)
	}
	if t.Failed() {
		t.Log("\n" + text)
	}
}

func TestElide(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 10, "abcdefghij"},
		{"abcdefghijk", 10, "abcd…ghijk"},
		{"amd/Llama-3.2-1B-Instruct-awq-uint4-asym-g128-bf16-lmhead", 38, "amd/Llama-3.2-1B-I…ym-g128-bf16-lmhead"},
		// By display columns and grapheme clusters (issue 36): a wide
		// character is 2 columns and never halved, an accent (e + U+0301)
		// stays with its letter, an emoji with its modifiers.
		{"通义千问/大模型一二三四五", 10, "通义…四五"}, // 9 columns: a third wide character would make 11
		{"mode\u0301le-e\u0301te\u0301-caf\u0301e", 10, "mode\u0301…-caf\u0301e"},
		{"👩‍👩‍👧‍👦👩‍👩‍👧‍👦👩‍👩‍👧‍👦👩‍👩‍👧‍👦👩‍👩‍👧‍👦👩‍👩‍👧‍👦", 7, "👩‍👩‍👧‍👦…👩‍👩‍👧‍👦👩‍👩‍👧‍👦"},
	} {
		if got := Elide(tc.in, tc.n); got != tc.want || Width(got) > tc.n {
			t.Errorf("Elide(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// Names in CJK, emoji and decomposed accents keep every line within 120
// display columns and the columns aligned (issue 36: rows of 125–133
// columns, an accent split from its letter), in both list tables.
func TestListTablesMeasureDisplayColumns(t *testing.T) {
	names := []string{
		"通义千问/通义千问大语言模型-七十二亿参数-指令微调版本-二零二五",
		"🦙🦙🦙/🦙🦙🦙🦙🦙-llama-👩‍👩‍👧‍👦👩‍👩‍👧‍👦-emoji-🇫🇷🇫🇷🇫🇷🇫🇷-model",
		"e\u0301e\u0301e\u0301/mode\u0300le-fran\u0327ais-e\u0301norme-a\u0300-la-carte-de\u0301coupe\u0301",
		"Qwen/Qwen3-0.6B",
	}
	var rows []ListRow
	var inspect []InspectRow
	for i, name := range names {
		r := &Report{Model: name, Status: verdict.Pass, Workspace: &Workspace{Name: "通义千问大模型七十二亿"}, Architecture: "Qwen3ForCausalLM"}
		rows = append(rows, ListRow{Report: r, ListedAt: fmt.Sprintf("l.txt:%d", i+1)})
		inspect = append(inspect, InspectRow{ListRow: rows[i], Parameters: 8e9, BF16Bytes: 16 << 30, ReferenceBytes: 17 << 30})
	}
	for name, text := range map[string]string{
		"run":     RunListText(rows, ListTotals{Status: verdict.Pass}),
		"inspect": InspectListText(inspect, ListTotals{Status: verdict.Pass}),
	} {
		lines := strings.Split(text, "\n")
		for i, line := range lines {
			if w := Width(line); w > TableWidth {
				t.Errorf("%s: line %d is %d columns, more than %d:\n%s", name, i+1, w, TableWidth, line)
			}
			if strings.Contains(line, "…\u0301") || strings.Contains(line, "…\u0300") || strings.Contains(line, "…\u0327") {
				t.Errorf("%s: line %d splits an accent from its letter: %q", name, i+1, line)
			}
		}
		// The second column starts at the same display column on every row.
		var starts []int
		for _, line := range lines[:len(names)+1] {
			cell := strings.Index(line, "  ")
			for cell < len(line) && line[cell] == ' ' {
				cell++
			}
			starts = append(starts, Width(line[:cell]))
		}
		for _, s := range starts[1:] {
			if s != starts[0] {
				t.Errorf("%s: the columns do not line up (second column at %v):\n%s", name, starts, text)
				break
			}
		}
	}
}

// inspect @FILE's table fits 120 columns too, and says the shared cause once.
func TestInspectListTableFits120Columns(t *testing.T) {
	var rows []InspectRow
	for _, r := range offlineFleet() {
		r.Report.Architecture = "Qwen3ForConditionalGenerationWithAVeryLongName"
		r.Report.Revision = strings.Repeat("a", 40)
		rows = append(rows, InspectRow{ListRow: r, Parameters: 8e9, BF16Bytes: 16 << 30, ReferenceBytes: 17 << 30,
			LaterPhases: []string{"qkv_bias (applied on the host around the bias-free kernels)", "qk_norm", "not multiples of 1024 (Phase 2 padding): emb_dim 896, hidden_dim 4864, q_dim 896, kv_dim 128", "tied embeddings"}})
	}
	text := InspectListText(rows, ListTotals{Status: verdict.Error, Shard: "1/4", Listed: 120})
	for i, line := range strings.Split(text, "\n") {
		if n := utf8.RuneCountInString(line); n > TableWidth {
			t.Errorf("line %d is %d columns, more than %d:\n%s", i+1, n, TableWidth, line)
		}
	}
	if strings.Count(text, "not in the cache") != 0 || !strings.Contains(text, "24 models ERROR: not in the HF cache") || !strings.Contains(text, "REJECTED (quantized)") {
		t.Errorf("table:\n%s", text)
	}
}

// A list through a tree with quantized deployments gets the Q column: a
// bundle row shows its four quantized gates, each the worst over its keys
// (the base key's pairing FAIL), a bf16 row "-", and every line still fits
// 120 columns.
func TestRunListQuantizedColumn(t *testing.T) {
	rows := offlineFleet()
	key := func(name string, pairing verdict.Status) *Report {
		pass := verdict.Section{Status: verdict.Pass}
		return &Report{Model: "FastFlowLM/Llama-3.2-1B-NPU2", Status: verdict.Worst(pairing), Seconds: 31.5, Config: &model.Config{},
			Quantized: &QuantizedKey{Folder: "llama32_1b_q4nx", Key: name, Reference: "meta-llama/Llama-3.2-1B-Instruct"},
			Workspace: &Workspace{Name: "llama32_1b_q4nx", Mode: ModeValidatedExisting},
			Gates: Gates{QuantWeights: &quant.Weights{Section: pass}, QuantConfig: &quant.Constants{Section: pass},
				Pairing: &quant.Pairing{Section: verdict.Section{Status: pairing}}, QuantE2E: &quant.EndToEnd{Section: pass}}}
	}
	bundle := key("instruct", verdict.Pass)
	bundle.Keys = []*Report{key("base", verdict.Fail)}
	bundle.Status = verdict.Fail
	long := key("base", verdict.Pass)
	long.Model, long.ReusedFrom = "NousResearch/Meta-Llama-3.1-8B-Instruct-With-A-Long-Suffix", &ReusedFrom{Path: "/x/report.json", Recorded: time.Now()}
	rows = append(rows, ListRow{Report: bundle, ListedAt: "hf_models.txt:40"}, ListRow{Report: long, ListedAt: "hf_models.txt:41"})
	text := RunListText(rows, ListTotals{Status: verdict.Error, Seconds: 1234.5})
	for i, line := range strings.Split(text, "\n") {
		if n := utf8.RuneCountInString(line); n > TableWidth {
			t.Errorf("line %d is %d columns, more than %d:\n%s", i+1, n, TableWidth, line)
		}
	}
	var bundleLine, bf16Line string
	for _, line := range strings.Split(text, "\n") {
		switch {
		case bundleLine == "" && strings.HasPrefix(line, "FastFlowLM/Llama-3.2-1B-NPU2 "):
			bundleLine = line
		case bf16Line == "" && strings.HasPrefix(line, "Qwen/Qwen3-0.6B "):
			bf16Line = line
		}
	}
	if f := strings.Fields(bundleLine); !slices.Contains(f, "++F+") {
		t.Errorf("the bundle row does not show its quantized gates (++F+: the base key's pairing):\n%s", text)
	}
	if f := strings.Fields(bf16Line); !slices.Contains(f, "-") {
		t.Errorf("a bf16 row's Q cell is not -:\n%s", text)
	}
	if !strings.HasPrefix(text, "MODEL ") || !slices.Contains(strings.Fields(strings.SplitN(text, "\n", 2)[0]), "Q") || !strings.Contains(text, "Q a quantized deployment's gates") {
		t.Errorf("no Q column or legend:\n%s", text)
	}
	if plain := RunListText(offlineFleet(), ListTotals{Status: verdict.Error}); slices.Contains(strings.Fields(strings.SplitN(plain, "\n", 2)[0]), "Q") {
		t.Errorf("a list with no quantized row has a Q column:\n%s", plain)
	}
	if t.Failed() {
		t.Log("\n" + text)
	}
}

// A model named with control characters (a folder named with a tab, a
// newline, an escape sequence) keeps both tables' columns: each row is one
// line of the same width as the header's columns, and no escape reaches the
// terminal.
func TestListTablesEscapeControlCharacters(t *testing.T) {
	names := []string{"/m/tab\there", "/m/new\nline", "/m/esc\x1b[31mred", "/m/plain"}
	var run []ListRow
	var insp []InspectRow
	for _, n := range names {
		r := &Report{Model: n, Status: verdict.Rejected, Rejections: []model.Rejection{{Code: "moe", Message: "x"}}}
		run = append(run, ListRow{Report: r})
		insp = append(insp, InspectRow{ListRow: ListRow{Report: r}})
	}
	for name, text := range map[string]string{
		"run":     RunListText(run, ListTotals{Status: verdict.Rejected}),
		"inspect": InspectListText(insp, ListTotals{Status: verdict.Rejected}),
	} {
		lines := strings.Split(text, "\n")
		if strings.ContainsAny(text, "\t\x1b") || !strings.HasPrefix(lines[1], `/m/tab\there`) || !strings.HasPrefix(lines[2], `/m/new\nline`) ||
			!strings.HasPrefix(lines[3], `/m/esc\x1b[31mred`) || !strings.Contains(lines[0], "VERDICT") {
			t.Errorf("%s table:\n%s", name, text)
		}
	}
}

// TestFetchCommandFetchesABundle: following the fetch hint downloads every
// file phase0 reads of a model or a quantized bundle (model.q4nx and the
// card beside config, tokenizer and safetensors), and never a pickle.
func TestFetchCommandFetchesABundle(t *testing.T) {
	cmd := fetchCommand([]string{"FastFlowLM/Llama-3.2-1B-NPU2"})
	_, include, ok := strings.Cut(cmd, "--include ")
	if !ok {
		t.Fatalf("no --include:\n%s", cmd)
	}
	include, _, _ = strings.Cut(include, ";")
	matches := func(file string) bool {
		for _, p := range strings.Fields(include) {
			if ok, err := path.Match(strings.Trim(p, "'"), file); err == nil && ok {
				return true
			}
		}
		return false
	}
	for _, f := range []string{"model.q4nx", "README.md", "config.json", "tokenizer.json", "tokenizer.model", "model-00001-of-00002.safetensors", "merges.txt"} {
		if !matches(f) {
			t.Errorf("the fetch hint leaves out %s: %s", f, include)
		}
	}
	if matches("pytorch_model.bin") {
		t.Errorf("the fetch hint downloads a pickle: %s", include)
	}
}
