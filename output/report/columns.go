package report

import (
	"strings"

	"github.com/rivo/uniseg"
)

// columns lays a list's table out by display width: a cell's width is what
// a terminal gives it (uniseg: grapheme clusters, East Asian wide and emoji
// two columns, a combining mark none), where text/tabwriter counted runes,
// so CJK, emoji and decomposed accents pushed rows past TableWidth. Each
// column is as wide as its widest cell plus 2 (tabwriter's padding); the
// last cell of a row is not padded.
type columns struct{ rows [][]string }

func (c *columns) add(cells ...string) { c.rows = append(c.rows, cells) }

func (c *columns) writeTo(sb *strings.Builder) {
	var widths []int
	for _, row := range c.rows {
		for i, cell := range row[:max(len(row)-1, 0)] {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], uniseg.StringWidth(cell))
		}
	}
	for _, row := range c.rows {
		for i, cell := range row {
			sb.WriteString(cell)
			if i < len(row)-1 {
				sb.WriteString(strings.Repeat(" ", widths[i]+2-uniseg.StringWidth(cell)))
			}
		}
		sb.WriteString("\n")
	}
}

// Width is s's display width in a terminal's columns.
func Width(s string) int { return uniseg.StringWidth(s) }

// Elide cuts s to at most n display columns by taking grapheme clusters out
// of the middle (an accent stays with its letter, a wide character is never
// halved), so a long model name keeps its org and its suffix.
func Elide(s string, n int) string {
	s = printable(s)
	if uniseg.StringWidth(s) <= n || n < 3 {
		return s
	}
	var clusters []string
	var widths []int
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		clusters = append(clusters, g.Str())
		widths = append(widths, g.Width())
	}
	headMax := (n - 1) / 2
	tailMax := n - 1 - headMax
	var head, tail strings.Builder
	used, i := 0, 0
	for ; i < len(clusters) && used+widths[i] <= headMax; i++ {
		head.WriteString(clusters[i])
		used += widths[i]
	}
	tailMax += headMax - used // a wide character that did not fit the head leaves its column to the tail
	used = 0
	j := len(clusters)
	for j > i && used+widths[j-1] <= tailMax {
		j--
		used += widths[j]
	}
	for _, c := range clusters[j:] {
		tail.WriteString(c)
	}
	return head.String() + "…" + tail.String()
}
