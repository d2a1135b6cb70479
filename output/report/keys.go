package report

import (
	"fmt"
	"strings"

	"phase0/gate/verdict"
)

// keysText renders a quantized command's keys: which key the report above
// is, then every other key's own report (its gate table and findings), so
// no key's verdict is hidden behind the first one's.
func (r *Report) keysText() string {
	if r.Quantized == nil {
		return ""
	}
	var b strings.Builder
	for _, k := range r.Keys {
		title := k.Model
		if q := k.Quantized; q != nil {
			title = fmt.Sprintf("%s key %q (reference %s)", q.Folder, q.Key, q.Reference)
		}
		fmt.Fprintf(&b, "\n── %s: %s\n", title, k.Status)
		b.WriteString(k.Text())
	}
	return b.String()
}

// keyLine names the quantized key a report is about.
func (q *QuantizedKey) keyLine() string {
	if q == nil {
		return ""
	}
	s := fmt.Sprintf("  quantized: %s key %q, reference %s, loader %s", q.Folder, q.Key, q.Reference, q.Loader)
	if q.Bundle != "" {
		s += ", bundle " + q.Bundle
	}
	return s + "\n"
}

// WithKeys is a quantized command's report: the first key's, carrying
// every other key's report, with the worst of their verdicts. A key that
// was interrupted makes the command interrupted (exit 130), and a key that
// could not be evaluated gives an ERROR command its error.
func WithKeys(reports []*Report) *Report {
	first := reports[0]
	for _, r := range reports[1:] {
		first.Keys = append(first.Keys, r)
		first.Status = verdict.Worst(first.Status, r.Status)
		first.Interrupted = first.Interrupted || r.Interrupted
		if first.Error == "" && r.Status == verdict.Error {
			first.Error, first.ErrorKind = r.Error, r.ErrorKind
			if q := r.Quantized; q != nil {
				first.Error = fmt.Sprintf("key %q: %s", q.Key, r.Error)
			}
		}
	}
	return first
}
