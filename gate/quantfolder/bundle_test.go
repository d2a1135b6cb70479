package quantfolder

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/internal/testenv"
)

// rawBundle is a safetensors-framed file of header and data, padded as a
// writer pads it.
func rawBundle(t *testing.T, dir, header string, data int) {
	t.Helper()
	header += strings.Repeat(" ", (8-len(header)%8)%8)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(header)))
	b := append(append(n[:], header...), make([]byte, data)...)
	if err := os.WriteFile(filepath.Join(dir, "model.q4nx"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCheckBundleCodecs: a bundle in the older Q4NX header codec (dtype
// Q4NX, shape [M, K], 5,120 bytes a 32×256 block), which the folder's
// loader reads beside I8, is a readable bundle, not "unknown dtype Q4NX";
// one whose Q4NX shape is not whole blocks or whose bytes do not fit is not.
func TestCheckBundleCodecs(t *testing.T) {
	fx := testenv.QuantFixtures(t)
	for _, b := range []string{"clean", "clean_q4nx"} {
		if p := checkBundle("FastFlowLM/x", filepath.Join(fx, "bundles", b)); len(p) != 0 {
			t.Errorf("%s: %q, want a readable bundle", b, p)
		}
	}
	for _, c := range []struct {
		name, header string
		data         int
		want         string
	}{
		{"whole blocks", `{"w":{"dtype":"Q4NX","shape":[64,512],"data_offsets":[0,20480]},"n":{"dtype":"BF16","shape":[4],"data_offsets":[20480,20488]}}`, 20488, ""},
		{"not whole blocks", `{"w":{"dtype":"Q4NX","shape":[48,512],"data_offsets":[0,20480]}}`, 20480, `tensor "w": shape [48 512] cannot hold Q4NX data`},
		{"bytes lie", `{"w":{"dtype":"Q4NX","shape":[64,512],"data_offsets":[0,10240]}}`, 10240, `tensor "w": shape [64 512] of Q4NX needs 20480 bytes`},
		{"another dtype", `{"w":{"dtype":"Q8NX","shape":[64,512],"data_offsets":[0,20480]}}`, 20480, `unknown dtype "Q8NX"`},
	} {
		dir := t.TempDir()
		rawBundle(t, dir, c.header, c.data)
		p := checkBundle("FastFlowLM/x", dir)
		if c.want == "" && len(p) != 0 || c.want != "" && (len(p) != 1 || !strings.Contains(p[0], c.want) || !strings.Contains(p[0], "model.q4nx")) {
			t.Errorf("%s: %q, want %q", c.name, p, c.want)
		}
	}
}

// TestCheckBundleTruncated: a truncated bundle names the file and the
// first tensor it cuts (docs/quantized.md promises both).
func TestCheckBundleTruncated(t *testing.T) {
	dir := t.TempDir()
	rawBundle(t, dir, `{"a":{"dtype":"I8","shape":[2,5120],"data_offsets":[0,10240]},"model.layers.1.mlp.down_proj.weight":{"dtype":"I8","shape":[2,5120],"data_offsets":[10240,20480]},"z":{"dtype":"BF16","shape":[4],"data_offsets":[20480,20488]}}`, 12000)
	p := checkBundle("FastFlowLM/x", dir)
	if len(p) != 1 || !strings.Contains(p[0], "model.q4nx") || !strings.Contains(p[0], `tensor "model.layers.1.mlp.down_proj.weight" (and the 1 tensors after it)`) || !strings.Contains(p[0], "truncated") {
		t.Errorf("%q, want the file and the first tensor cut named", p)
	}
}
