package verdict

import (
	"strings"
	"testing"
)

func TestWorstAndExitCodes(t *testing.T) {
	for _, tc := range []struct {
		in   []Status
		want Status
		code int
	}{
		{nil, Pass, 0},
		{[]Status{Pass, Warn}, Warn, 0},
		{[]Status{Skip, Pass}, Skip, 0},
		{[]Status{Warn, Fail, Pass}, Fail, 1},
		{[]Status{Fail, Rejected}, Rejected, 1},
		{[]Status{Fail, Error, Rejected}, Error, 2},
	} {
		got := Worst(tc.in...)
		if got != tc.want || got.ExitCode() != tc.code {
			t.Errorf("Worst(%v) = %s (exit %d), want %s (exit %d)", tc.in, got, got.ExitCode(), tc.want, tc.code)
		}
	}
	if Status("").Valid() || Status("OK").Valid() || !Warn.Valid() {
		t.Error("Valid accepts only the defined words")
	}
	if Status("").ExitCode() != 2 {
		t.Error("an unknown status must mean could-not-evaluate")
	}
}

func TestSectionCapsFindings(t *testing.T) {
	s := NewSection()
	for i := 0; i < MaxFindings+7; i++ {
		s.FailWith("tensor %d missing", i)
	}
	if s.Status != Fail || len(s.Findings) != MaxFindings || s.Omitted != 7 {
		t.Fatalf("status %s, %d findings, %d omitted", s.Status, len(s.Findings), s.Omitted)
	}
	all := s.AllFindings()
	if last := all[len(all)-1]; !strings.Contains(last, "7 more") {
		t.Errorf("last line %q does not count the omitted findings", last)
	}
	if len(s.Findings) != MaxFindings {
		t.Error("AllFindings must not grow the stored list")
	}
}
