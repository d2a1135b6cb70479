package settings

import "testing"

func TestNearest(t *testing.T) {
	flags := []string{"workers", "scan", "fresh", "refresh", "max-perplexity-ratio"}
	for in, want := range map[string]string{
		"worker": "workers", "Workers": "workers", "fersh": "fresh", "sacn": "scan",
		"max-perplexity-ration": "max-perplexity-ratio", "zzzzzz": "",
	} {
		if got := Nearest(in, flags); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Nearest("PHASE0_WORKRES", []string{"PHASE0_WORKERS"}); got != "PHASE0_WORKERS" {
		t.Errorf("Nearest(PHASE0_WORKRES) = %q", got)
	}
}
