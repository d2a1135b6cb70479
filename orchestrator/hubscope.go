package orchestrator

import (
	"os"

	"phase0/model"
)

// refusedSnapshot reports whether an incomplete cached snapshot holds a
// config.json the architecture gate refuses. The refusal is then the
// answer: the files it lacks (a VLA policy ships no tokenizer, a vision
// model's weights may be elsewhere) would not change it, so nothing is
// downloaded for it and an offline run says REJECTED with the reason
// instead of "download it first".
func refusedSnapshot(dir string) bool {
	raw, err := model.ReadRaw(os.DirFS(dir))
	if err != nil {
		return false
	}
	return model.Analyze(raw).Rejected()
}
