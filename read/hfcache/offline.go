package hfcache

import "strings"

// Offline reads the switch as huggingface_hub does: HF_HUB_OFFLINE, else
// TRANSFORMERS_OFFLINE, true only for 1/ON/YES/TRUE (any case).
func Offline(env func(string) string) bool {
	v := env("HF_HUB_OFFLINE")
	if v == "" {
		v = env("TRANSFORMERS_OFFLINE")
	}
	switch strings.ToUpper(v) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}
