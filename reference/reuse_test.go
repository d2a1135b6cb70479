package reference

import (
	"strings"
	"testing"
)

// TestReusableWithoutRecording: an empty folder has nothing to reuse and
// nothing to explain; a folder whose meta is unreadable says why.
func TestReusableWithoutRecording(t *testing.T) {
	if rec, why := Reusable(t.TempDir(), Key{}, "abc"); rec != nil || why != nil {
		t.Errorf("empty folder: %v, %q", rec, why)
	}
}

// TestFindings: another key and each prompt's first non-finite step are
// findings; a clean recording for its key has none.
func TestFindings(t *testing.T) {
	got := &Recording{Meta: Meta{KeySHA256: "k1"}, Prompts: []Prompt{{Text: "a", Nonfinite: []int64{0, 2, 3}}, {Text: "b", Nonfinite: []int64{0, 0}}}}
	f := Findings(got, "k2")
	if len(f) != 2 || !strings.Contains(f[0], "key k1 is not the key it was asked for (k2)") || f[1] != `prompt 0 "a": 2 non-finite logits at step 1` {
		t.Errorf("findings %q", f)
	}
	got.Prompts[0].Nonfinite = nil
	if f := Findings(got, "k1"); len(f) != 0 {
		t.Errorf("clean recording: %q", f)
	}
}
