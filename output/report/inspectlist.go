package report

import (
	"fmt"
	"strings"
)

// InspectRow is one model of `phase0 inspect @FILE`: its report, the list
// line it came from, its size, and what the later phases will meet.
type InspectRow struct {
	ListRow
	Parameters, BF16Bytes, ReferenceBytes int64
	LaterPhases                           []string
}

const archWidth = 18

// InspectListText is `phase0 inspect @FILE`'s table within TableWidth
// columns: a row per model, what the later phases will meet for each model
// that passed, why each other row did not pass (shared causes said once).
func InspectListText(rows []InspectRow, t ListTotals) string {
	var sb strings.Builder
	if t.Shard != "" {
		fmt.Fprintf(&sb, "shard %s: %d of %d models\n\n", t.Shard, len(rows), t.Listed)
	}
	var tw columns
	tw.add("MODEL", "REVISION", "ARCHITECTURE", "VERDICT", "PARAMS", "BF16", "REF RAM")
	var later, failed []ListRow
	var laterText []string
	for _, row := range rows {
		m := row.Report
		verdictText := string(m.Status)
		var codes []string
		for _, r := range m.Rejections {
			codes = append(codes, r.Code)
		}
		if len(codes) > 0 {
			verdictText += " (" + strings.Join(codes, ",") + ")"
		}
		tw.add(Elide(m.Model, modelWidth), OrDash(shortRev(m.Revision)), OrDash(Elide(m.Architecture, archWidth)),
			cut(verdictText, 20), count(row.Parameters), size(row.BF16Bytes), size(row.ReferenceBytes))
		if _, bad := Reason(m); bad {
			failed = append(failed, row.ListRow)
		} else if len(row.LaterPhases) > 0 {
			later = append(later, row.ListRow)
			laterText = append(laterText, strings.Join(row.LaterPhases, "; "))
		}
	}
	tw.writeTo(&sb)
	if len(later) > 0 {
		sb.WriteString("\nWhat the later phases will meet:\n")
		for i, row := range later {
			sb.WriteString(wrap(row.Report.Model+": "+laterText[i], TableWidth, "  ", "      "))
		}
	}
	if why := Causes(failed); why != "" {
		sb.WriteString("\n" + why)
	}
	status := string(t.Status)
	if t.Interrupted {
		status += " (interrupted)"
	}
	fmt.Fprintf(&sb, "\n%d model(s): %s\n", len(rows), status)
	return sb.String()
}

func shortRev(r string) string {
	if len(r) == 40 {
		return r[:8]
	}
	return r
}

func count(n int64) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fB", float64(n)/1e9)
}

func size(n int64) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// cut shortens s to at most n characters at its end, marking the cut with
// "…" (the reasons below the table say it whole).
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
