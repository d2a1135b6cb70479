package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"phase0/internal/sttest"
)

// TestHeaderJSONStrict holds the hand-written scanner to encoding/json's
// verdict on headers that are valid or invalid only as JSON.
func TestHeaderJSONStrict(t *testing.T) {
	const u8 = `{"dtype":"U8","shape":[1],"data_offsets":[0,1]}`
	valid := []struct{ header, name string }{
		{`{"a\"b":` + u8 + `}`, `a"b`},
		{`{"\u00e9\ud83d\ude00\/":` + u8 + `}`, "é😀/"},
		{"{ \t\r\n\"x\" \n:\n { \"dtype\" : \"U8\" , \"shape\" : [ 1 ] , \"data_offsets\" : [ 0 , 1 ] } \n}\n  ", "x"},
		{`{"__metadata__":{"k":"v\\n"},"y":` + u8 + `}`, "y"},
		{`{"z":{"dtype":"U8","shape":[1],"data_offsets":[-0,1]}}`, "z"},
	}
	for _, tc := range valid {
		if !json.Valid([]byte(tc.header)) {
			t.Fatalf("test bug: %s is not JSON", tc.header)
		}
		data := rawFile(tc.header, 1)
		h, err := ReadHeader(bytes.NewReader(data), int64(len(data)), "m.safetensors")
		if err != nil {
			t.Errorf("%s: %v", tc.header, err)
			continue
		}
		if len(h.Tensors) != 1 || h.Tensors[0].Name != tc.name {
			t.Errorf("%s: tensors %+v, want one named %q", tc.header, h.Tensors, tc.name)
		}
	}
	invalid := []string{
		`{"a":{"dtype":"U8","shape":[1,],"data_offsets":[0,1]}}`,
		`{"a":{"dtype":"U8","shape":[01],"data_offsets":[0,1]}}`,
		`{"a":{"dtype":"U8","shape":[1.],"data_offsets":[0,1]}}`,
		`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},}`,
		`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],}}`,
		`{"a":{"dtype":"U8" "shape":[1],"data_offsets":[0,1]}}`,
		`{"a" {"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`,
		"{\"a\tb\":" + u8 + "}",
		`{"a\x":` + u8 + `}`,
		`{"a\u12":` + u8 + `}`,
		`{"__metadata__":nul}`,
		`{"__metadata__":{"k":"v",}}`,
		`{'a':` + u8 + `}`,
		`{"a":` + u8 + `]`,
	}
	for _, header := range invalid {
		if json.Valid([]byte(header)) {
			t.Fatalf("test bug: %s is JSON", header)
		}
		data := rawFile(header, 1)
		_, err := ReadHeader(bytes.NewReader(data), int64(len(data)), "m.safetensors")
		var fe *FormatError
		if !errors.As(err, &fe) || fe.File != "m.safetensors" {
			t.Errorf("%s: got %v, want a FormatError for m.safetensors", header, err)
		}
	}
}

// TestIndexDeepNesting: a document of brackets is refused, not a stack overflow.
func TestIndexDeepNesting(t *testing.T) {
	doc := `{"weight_map":{"a":"x.safetensors"},"x":` + strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20) + `}`
	_, err := ReadIndex(strings.NewReader(doc), IndexFile)
	if err == nil || !strings.Contains(err.Error(), "depth") {
		t.Fatalf("got %v, want a depth error", err)
	}
}

// TestLoadRefusesNonRegular: a directory or FIFO where the layout's files
// belong is refused by name, promptly (a FIFO would block an open forever).
func TestLoadRefusesNonRegular(t *testing.T) {
	type setup func(t *testing.T, dir string)
	fifo := func(name string) setup {
		return func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}
	}
	mkdir := func(name string) setup {
		return func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	shard := "model-00001-of-00001.safetensors"
	writeShard := func(t *testing.T, dir string) {
		if err := sttest.WriteFile(filepath.Join(dir, shard), []sttest.WriteTensor{sttest.U8("a", 1)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	writeIndex := func(t *testing.T, dir string) { mustIndex(t, dir, map[string]string{"a": shard}) }
	tests := []struct {
		name  string
		steps []setup
		want  string
	}{
		{"index is a directory", []setup{writeShard, mkdir(IndexFile)}, IndexFile + " is a directory"},
		{"index is a FIFO", []setup{writeShard, fifo(IndexFile)}, IndexFile + " is a named pipe"},
		{"single file is a directory", []setup{mkdir(SingleFile)}, SingleFile + " is a directory"},
		{"single file is a FIFO", []setup{fifo(SingleFile)}, SingleFile + " is a named pipe"},
		{"shard is a FIFO", []setup{writeIndex, fifo(shard)}, shard + " is a named pipe"},
		{"shard is a directory", []setup{writeIndex, mkdir(shard)}, shard + " is a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, s := range tc.steps {
				s(t, dir)
			}
			done := make(chan error, 1)
			go func() {
				_, err := Load(os.DirFS(dir))
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want ErrNotRegular naming %q", err, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Load blocked")
			}
		})
	}
}
