package report

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"phase0/gate/verdict"
)

// TableWidth is the terminal a list's table fits: every line of RunListText
// is at most this many characters.
const TableWidth = 120

// Column caps that keep a run list's row within TableWidth; longer names are
// cut in the middle (the JSON and the reason lines keep them whole).
const (
	modelWidth  = 38
	folderWidth = 14
	// quantModelWidth is modelWidth in a table with the Q column (a tree
	// with quantized deployments): the column's 4 characters and its gap.
	quantModelWidth = modelWidth - 6
)

// ListRow is one model of a list and the list line it came from
// ("argument 2", "hf_models.txt:14").
type ListRow struct {
	Report   *Report
	ListedAt string
}

// ListTotals is what the table's last line says about the whole list.
type ListTotals struct {
	Status      verdict.Status
	Interrupted bool
	Seconds     float64
	Shard       string // "I/N" with --shard
	Listed      int    // the list's size before --shard
}

// listLegend explains the table's short headers and cells.
const listLegend = "ARCH architecture gate · WTS weights from the headers (gate 1) · PY weights through the generated loader (gate 1) · " +
	"CFG config consistency (gate 3) · HF bf16 baseline (gate 2) · REF the recorded reference: rec recorded, reuse reused by its key · " +
	"MODE gen generated, val an existing module validated, reused the recorded PASS reused · " +
	"ok passed, REJ rejected, ERR could not evaluate, - not run"

// quantLegend explains the Q column, shown when a row is a quantized deployment.
const quantLegend = "Q a quantized deployment's gates, worst over its keys: quantized weights (gate 1), quantized module config (gate 3), " +
	"pairing, quantized end to end (gate 2); + passed, F failed, W warned, E could not evaluate, R rejected, - not run"

// runListGates are the gate columns of a run list: header, and the gate's
// title in Gates.Rows.
var runListGates = []struct{ header, title string }{
	{"WTS", "weights (native)"},
	{"PY", "weights (python)"},
	{"CFG", "config consistency"},
	{"HF", "hf bf16 baseline"},
}

// RunListText is `phase0 run @FILE`'s table: a row per model in list order
// within TableWidth columns, a legend, then why each row that did not pass
// did not, rows that share a cause said once, and the counts.
func RunListText(rows []ListRow, t ListTotals) string {
	var sb strings.Builder
	if t.Shard != "" {
		fmt.Fprintf(&sb, "shard %s: %d of %d models\n\n", t.Shard, len(rows), t.Listed)
	}
	quantized := slices.ContainsFunc(rows, func(r ListRow) bool { return r.Report.Quantized != nil })
	nameWidth := modelWidth
	if quantized {
		nameWidth = quantModelWidth
	}
	var tw columns
	header := []string{"MODEL", "FOLDER", "MODE", "ARCH"}
	for _, g := range runListGates {
		header = append(header, g.header)
	}
	if quantized {
		header = append(header, "Q")
	}
	tw.add(append(header, "REF", "SEC", "VERDICT")...)
	for _, row := range rows {
		m := row.Report
		folder, mode := "-", "-"
		if w := m.Workspace; w != nil {
			folder, mode = w.Name, "gen"
			if w.Mode == ModeValidatedExisting {
				mode = "val"
			}
		}
		if m.ReusedFrom != nil {
			mode += " reused"
		}
		ran := map[string]verdict.Status{}
		for _, g := range m.Gates.Rows() {
			ran[g.Title] = g.Section.Status
		}
		cells := []string{Elide(m.Model, nameWidth), Elide(folder, folderWidth), mode, archCell(m)}
		for _, g := range runListGates {
			cells = append(cells, statusCell(ran[g.title]))
		}
		if quantized {
			cells = append(cells, quantCell(m))
		}
		cells = append(cells, referenceCell(m.Reference), secondsCell(m.Seconds), string(m.Status))
		tw.add(cells...)
	}
	tw.writeTo(&sb)
	sb.WriteString("\n")
	sb.WriteString(wrap(listLegend, TableWidth, "", ""))
	if quantized {
		sb.WriteString(wrap(quantLegend, TableWidth, "", ""))
	}
	if why := Causes(rows); why != "" {
		sb.WriteString("\n" + why)
	}
	counts := map[verdict.Status]int{}
	for _, row := range rows {
		counts[row.Report.Status]++
	}
	var parts []string
	for _, st := range []verdict.Status{verdict.Pass, verdict.Warn, verdict.Fail, verdict.Rejected, verdict.Error} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	status := string(t.Status)
	if t.Interrupted {
		status += " (interrupted)"
	}
	fmt.Fprintf(&sb, "\n%d model(s) in %.1fs: %s (%s)\n", len(rows), t.Seconds, status, strings.Join(parts, ", "))
	return sb.String()
}

// statusCell is a gate's outcome in four characters.
func statusCell(s verdict.Status) string {
	switch s {
	case "":
		return "-"
	case verdict.Pass:
		return "ok"
	case verdict.Rejected:
		return "REJ"
	case verdict.Error:
		return "ERR"
	case verdict.Skip:
		return "skip"
	}
	return string(s)
}

// quantCell is a quantized deployment's four gates, one character each
// (quantized weights, module config, pairing, end to end), each the worst
// over the row's keys; "-" for a bf16 row.
func quantCell(r *Report) string {
	if r.Quantized == nil {
		return "-"
	}
	worst := make([]verdict.Status, 4)
	for _, k := range append([]*Report{r}, r.Keys...) {
		g := k.Gates
		var secs [4]*verdict.Section
		if g.QuantWeights != nil {
			secs[0] = &g.QuantWeights.Section
		}
		if g.QuantConfig != nil {
			secs[1] = &g.QuantConfig.Section
		}
		if g.Pairing != nil {
			secs[2] = &g.Pairing.Section
		}
		if g.QuantE2E != nil {
			secs[3] = &g.QuantE2E.Section
		}
		for i, sec := range secs {
			if sec != nil {
				worst[i] = verdict.Worst(worst[i], sec.Status)
			}
		}
	}
	var b strings.Builder
	for _, st := range worst {
		switch st {
		case "", verdict.Skip:
			b.WriteByte('-')
		case verdict.Pass:
			b.WriteByte('+')
		case verdict.Rejected:
			b.WriteByte('R')
		case verdict.Error:
			b.WriteByte('E')
		default:
			b.WriteString(string(st)[:1])
		}
	}
	return b.String()
}

// archCell is the architecture gate's outcome: REJ, ok once a config was
// extracted, "-" when the run stopped before config.json.
func archCell(r *Report) string {
	switch {
	case len(r.Rejections) > 0:
		return "REJ"
	case r.Config != nil:
		return "ok"
	}
	return "-"
}

// referenceCell says whether the recorded reference is there: recorded
// anew, reused by its key, or its status.
func referenceCell(r *Reference) string {
	switch {
	case r == nil:
		return "-"
	case r.Reused:
		return "reuse"
	case r.Status == verdict.Pass:
		return "rec"
	}
	return statusCell(r.Status)
}

func secondsCell(s float64) string {
	if s >= 1000 {
		return fmt.Sprintf("%.0f", s)
	}
	return fmt.Sprintf("%.1f", s)
}

// printable is s with its control characters (C0, DEL, C1) written as
// escapes (\t, \x1b), as strconv.Quote writes them.
func printable(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// notInCache is the error of a hub id that is not in the HF cache while the
// hub is switched off (package resolve); missingBundle a quantized folder's
// bundle that is not in the cache (package quantfolder, which reads bundles
// offline).
var (
	notInCache    = regexp.MustCompile(`^model not available from the hub: (\S+) is not in the cache \((.*)\) and the hub is switched off \(([^)]*)\)`)
	missingBundle = regexp.MustCompile(`bundle (\S+) of \S+ is not in the HF cache`)
)

// missingID is the hub id whose absence from the HF cache is why a row did
// not pass ("" for any other reason), with the cache and the switch that
// turned the hub off when the message says them.
func missingID(msg string) (id, cache, off string) {
	if m := notInCache.FindStringSubmatch(msg); m != nil {
		return m[1], m[2], m[3]
	}
	if m := missingBundle.FindStringSubmatch(msg); m != nil {
		return m[1], "", ""
	}
	return "", "", ""
}

// Causes is why each row that did not pass did not, one entry per cause:
// rows whose reason is the same once the model's own name is taken out are
// said once, with the models they hold; every hub id missing from the cache
// of an offline machine, whichever row needs it (a bundle's row may need
// its reference), is in one entry with the one command that fetches
// exactly them.
func Causes(rows []ListRow) string {
	type cause struct {
		key    string
		status verdict.Status
		text   string
		rows   []ListRow
	}
	var (
		causes  []*cause
		missing *cause
		ids     []string
		needs   []string // "row needs id", for a row whose missing id is not its own
		where   [2]string
	)
	for _, row := range rows {
		why, failed := Reason(row.Report)
		if !failed {
			continue
		}
		if id, cache, off := missingID(why.Message); id != "" {
			if missing == nil {
				missing = &cause{key: "missing", status: why.Kind}
				causes = append(causes, missing)
			}
			missing.status = verdict.Worst(missing.status, why.Kind)
			missing.rows = append(missing.rows, row)
			if !slices.ContainsFunc(ids, func(s string) bool { return strings.EqualFold(s, id) }) {
				ids = append(ids, id)
			}
			if !strings.EqualFold(id, row.Report.Model) {
				needs = append(needs, row.Report.Model+" needs "+id)
			}
			if where[0] == "" && cache != "" {
				where = [2]string{cache, off}
			}
			continue
		}
		key := string(why.Kind) + " " + withoutModel(why.Message, row.Report.Model, "{model}")
		i := slices.IndexFunc(causes, func(c *cause) bool { return c.key == key })
		if i < 0 {
			causes = append(causes, &cause{key: key, status: why.Kind, text: why.Message})
			i = len(causes) - 1
		}
		causes[i].rows = append(causes[i].rows, row)
	}
	var sb strings.Builder
	for _, c := range causes {
		if c == missing {
			them := map[bool]string{true: "it", false: "them"}[len(ids) == 1]
			in := "not in the HF cache"
			if where[0] != "" {
				in = fmt.Sprintf("not in the HF cache (%s) while the hub is off (%s)", where[0], where[1])
			}
			text := fmt.Sprintf("%s %s: %s", plural(len(c.rows), "model"), c.status, in)
			if len(needs) > 0 || len(ids) != len(c.rows) {
				text = fmt.Sprintf("%s %s: %s %s (%s)", plural(len(c.rows), "model"), c.status, plural(len(ids), "hub id"), in, strings.Join(needs, ", "))
			}
			sb.WriteString(wrap(text+"; this fetches exactly "+them+":", TableWidth, "", "    "))
			sb.WriteString(fetchCommand(ids))
			continue
		}
		if len(c.rows) == 1 {
			r := c.rows[0]
			sb.WriteString(wrap(fmt.Sprintf("%s (%s): %s %s", r.Report.Model, shortSource(r.ListedAt), c.status, c.text), TableWidth, "", "    "))
			continue
		}
		var names []string
		for _, r := range c.rows {
			names = append(names, r.Report.Model)
		}
		generic := withoutModel(c.text, c.rows[0].Report.Model, "each")
		sb.WriteString(wrap(fmt.Sprintf("%s %s: %s", plural(len(c.rows), "model"), c.status, generic), TableWidth, "", "    "))
		sb.WriteString(wrap(strings.Join(names, " "), TableWidth, "    ", "    "))
	}
	return sb.String()
}

// withoutModel replaces the model's id in a message, as written and as the
// HF cache spells it in a folder name (models--org--name), with by.
func withoutModel(msg, model, by string) string {
	msg = strings.ReplaceAll(msg, model, by)
	if strings.Contains(model, "/") {
		msg = strings.ReplaceAll(msg, strings.ReplaceAll(model, "/", "--"), by)
	}
	return msg
}

// fetchCommand is one shell command that downloads exactly ids into the
// HF cache with huggingface_hub's `hf` CLI (what phase0 reads: config,
// tokenizer, safetensors, a quantized bundle's model.q4nx and its card;
// never a pickle), wrapped to TableWidth with backslash continuations, and
// the line saying what a gated repository needs first. `hf download` takes
// one repository and one pattern per --include.
func fetchCommand(ids []string) string {
	var sb strings.Builder
	line := "  for id in"
	for _, id := range ids {
		if len(line)+1+len(id)+2 > TableWidth {
			sb.WriteString(line + " \\\n")
			line = "     "
		}
		line += " " + id
	}
	sb.WriteString(line + "; do \\\n")
	line = "    HF_HUB_OFFLINE=0 hf download \"$id\""
	for _, p := range fetchPatterns {
		if len(line)+len(" --include ")+len(p)+2 > TableWidth {
			sb.WriteString(line + " \\\n")
			line = "     "
		}
		line += " --include " + p
	}
	sb.WriteString(line + "; done\n")
	sb.WriteString(wrap(GatedHint, TableWidth, "  ", "    "))
	return sb.String()
}

// GatedHint is what a gated repository (meta-llama's, Gemma's) needs before
// `hf download` can fetch it.
const GatedHint = "a gated repository needs its access granted on its Hub page and a token first: `hf auth login` (or set HF_TOKEN)"

// fetchPatterns are the files fetchCommand downloads, shell-quoted.
var fetchPatterns = []string{"'*.json'", "'*.safetensors'", "'*.txt'", "'*.model'", "'*.q4nx'", "'README.md'"}

// shortSource is a list line without the list file's folders.
func shortSource(s string) string {
	if strings.HasPrefix(s, "argument ") {
		return s
	}
	return filepath.Base(s)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// wrap breaks text into lines of at most width display columns at spaces: the
// first line starts with first, the others with rest. A word longer than a
// line stays whole.
func wrap(text string, width int, first, rest string) string {
	var sb strings.Builder
	line := first
	empty := true
	for _, word := range strings.Fields(text) {
		word = printable(word) // an escape sequence in a model's name
		if !empty && Width(line)+1+Width(word) > width {
			sb.WriteString(line + "\n")
			line, empty = rest, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	sb.WriteString(line + "\n")
	return sb.String()
}

// Wrap is text broken into lines of at most TableWidth columns, the first
// starting with first, the others with rest: a list's notes under its table.
func Wrap(text, first, rest string) string { return wrap(text, TableWidth, first, rest) }
