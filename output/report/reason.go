package report

import (
	"fmt"
	"strings"

	"phase0/gate/verdict"
)

// Why is why a report did not pass, as every list rendering says it: a
// one-line Message and the Details behind it. Kind is the report's status.
type Why struct {
	Kind    verdict.Status
	Message string
	Details []string
}

// Reason says why r did not pass: the rejection codes and messages, the
// error, or the first failing gate (then the reference, then the first
// failing stage) with its findings. A report that passed has no reason.
func Reason(r *Report) (Why, bool) {
	w := Why{Kind: r.Status}
	switch {
	case r.Status == verdict.Pass || r.Status == verdict.Warn || r.Status == verdict.Skip:
		return Why{}, false
	case len(r.Rejections) > 0:
		for _, rej := range r.Rejections {
			w.Details = append(w.Details, fmt.Sprintf("[%s] %s", rej.Code, rej.Message))
		}
		w.Message = strings.Join(w.Details, "; ")
		return w, true
	case r.Error != "":
		w.Message, _, _ = strings.Cut(r.Error, "\n")
		w.Details = strings.Split(r.Error, "\n")
		return w, true
	}
	sections := r.Gates.Rows()
	if r.Reference != nil {
		sections = append(sections, Gate{"reference", &r.Reference.Section})
	}
	for _, g := range sections {
		if g.Section.Status.Failed() || g.Section.Status == verdict.Error {
			w.Message = g.Title + ": " + g.Section.Summary
			w.Details = g.Section.Findings
			return w, true
		}
	}
	for _, st := range r.Stages {
		if st.Status.Failed() || st.Status == verdict.Error {
			w.Message = st.Name + ": " + st.Detail
			return w, true
		}
	}
	w.Message = string(r.Status)
	return w, true
}
