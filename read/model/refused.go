package model

import "io/fs"

// RefusedIn reports whether fsys (an incomplete cached snapshot) holds a
// config.json the architecture gate refuses. The refusal is then the
// answer: the files it lacks (a VLA policy ships no tokenizer, a vision
// model's weights may be elsewhere) would not change it, so nothing is
// downloaded for it and an offline run says REJECTED with the reason
// instead of "download it first".
func RefusedIn(fsys fs.FS) bool {
	raw, err := ReadRaw(fsys)
	if err != nil {
		return false
	}
	return Analyze(raw).Rejected()
}
