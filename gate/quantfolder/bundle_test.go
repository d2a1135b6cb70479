package quantfolder

import (
	"encoding/binary"
	"encoding/json"
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
		if p, _ := checkBundle("FastFlowLM/x", filepath.Join(fx, "bundles", b)); len(p) != 0 {
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
		p, _ := checkBundle("FastFlowLM/x", dir)
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
	p, _ := checkBundle("FastFlowLM/x", dir)
	if len(p) != 1 || !strings.Contains(p[0], "model.q4nx") || !strings.Contains(p[0], `tensor "model.layers.1.mlp.down_proj.weight" (and the 1 tensors after it)`) || !strings.Contains(p[0], "truncated") {
		t.Errorf("%q, want the file and the first tensor cut named", p)
	}
}

// rewrittenBundle is the fixture bundle clean with its header's entries
// changed by edit, its data bytes left as they are, in a folder of its own.
func rewrittenBundle(t *testing.T, clean string, edit func(map[string]map[string]any)) string {
	t.Helper()
	b, err := os.ReadFile(clean)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b[:8])
	var h map[string]map[string]any
	if err := json.Unmarshal(b[8:8+n], &h); err != nil {
		t.Fatal(err)
	}
	edit(h)
	header, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := b[8+n:]
	rawBundle(t, dir, string(header), 0)
	f, err := os.OpenFile(filepath.Join(dir, "model.q4nx"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCheckBundleUnlistedBytes: a projection missing from a real packed
// bundle's header with its bytes left in place is named as unlisted bytes
// between the two tensors around them, and as the bytes of the tensor the
// header lacks (every other layer lists its down_proj, of the gap's size),
// not as a fault of the next tensor.
func TestCheckBundleUnlistedBytes(t *testing.T) {
	fx := testenv.QuantFixtures(t)
	const missing = "model.layers.1.mlp.down_proj.weight"
	dir := rewrittenBundle(t, filepath.Join(fx, "bundles", "clean", "model.q4nx"), func(h map[string]map[string]any) { delete(h, missing) })
	p, _ := checkBundle("FastFlowLM/x", dir)
	want := []string{"model.q4nx: 81920 unlisted bytes at data offsets [", `between tensor "model.layers.1.input_layernorm.weight" and tensor "model.layers.1.mlp.gate_proj.weight"`,
		`likely the bytes of "model.layers.1.mlp.down_proj.weight", which the header does not list ("model.layers.0.mlp.down_proj.weight", the same tensor of another layer, is 81920 bytes)`}
	if len(p) != 1 {
		t.Fatalf("%q, want one problem", p)
	}
	for _, w := range want {
		if !strings.Contains(p[0], w) {
			t.Errorf("%s\nwant it to say %s", p[0], w)
		}
	}
	if strings.Contains(p[0], "gap: data begins") {
		t.Errorf("%s: names the next tensor's offsets as its fault", p[0])
	}
}

// TestCheckBundleDTypes: a readable bundle's header dtypes are kept per
// tensor (quantized gate 1 compares a kept tensor's with its bytes).
func TestCheckBundleDTypes(t *testing.T) {
	fx := testenv.QuantFixtures(t)
	dir := rewrittenBundle(t, filepath.Join(fx, "bundles", "clean", "model.q4nx"), func(h map[string]map[string]any) { h["model.norm.weight"]["dtype"] = "F16" })
	p, d := checkBundle("FastFlowLM/x", dir)
	if len(p) != 0 || d["model.norm.weight"] != "F16" || d["model.layers.0.input_layernorm.weight"] != "BF16" || d["model.layers.0.mlp.down_proj.weight"] != "I8" {
		t.Errorf("problems %q, dtypes %v", p, d)
	}
}
