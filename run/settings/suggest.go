package settings

import "strings"

// Nearest is the name among names that s most likely misspells: equal but
// for case, else at most two edits away (a swap of neighbours is one), the
// closest, ties to the first; "" when none is. It is the one suggester of
// phase0's "did you mean": for a PHASE0_* variable and for a flag.
func Nearest(s string, names []string) string {
	upper := make([]string, len(names))
	for i, n := range names {
		upper[i] = strings.ToUpper(n)
	}
	near := nearest(strings.ToUpper(s), upper)
	for i, u := range upper {
		if u == near && near != "" {
			return names[i]
		}
	}
	return ""
}
