package hfcache

import (
	"os"
	"testing"
)

// Offline must agree with huggingface_hub, or Go and Python would disagree on
// whether the hub may be contacted.
func TestOfflineMatchesHuggingFaceHub(t *testing.T) {
	tests := []struct {
		hub, transformers string
		want              bool
	}{
		{"", "", false},
		{"1", "", true},
		{"true", "", true},
		{"YES", "", true},
		{"on", "", true},
		{"0", "", false},
		{"2", "", false},
		{" 1 ", "", false},
		{"", "1", true},
		{"0", "1", false},
	}
	for _, tt := range tests {
		t.Setenv("HF_HUB_OFFLINE", tt.hub)
		t.Setenv("TRANSFORMERS_OFFLINE", tt.transformers)
		if got := Offline(os.Getenv); got != tt.want {
			t.Errorf("HF_HUB_OFFLINE=%q TRANSFORMERS_OFFLINE=%q: offline %v, want %v", tt.hub, tt.transformers, got, tt.want)
		}
	}
}
