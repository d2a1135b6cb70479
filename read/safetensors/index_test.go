package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"phase0/internal/sttest"
	"reflect"
	"strings"
	"testing"
)

type indexCase struct {
	name string
	json string
	is   error
	want string
}

// malformedIndexCases are kept as files under testdata/malformed-index/ too,
// where they seed FuzzReadIndex.
var malformedIndexCases = []indexCase{
	{"not_object", `["a"]`, nil, `index: got "["`},
	{"invalid_json", `{"weight_map": {"a": "x.safetensors",}}`, nil, "index JSON"},
	{"unterminated", `{"weight_map": {"a": "x.safetensors"`, nil, "ends early"},
	{"trailing_garbage", `{"weight_map": {"a": "x.safetensors"}} {}`, nil, "after the index object"},
	{"duplicate_top_key", `{"weight_map": {"a": "x.safetensors"}, "weight_map": {"b": "x.safetensors"}}`, ErrDuplicateKey, `key "weight_map" appears twice`},
	{"duplicate_tensor", `{"weight_map": {"a": "x.safetensors", "a": "y.safetensors"}}`, ErrDuplicateKey, `tensor "a" appears twice`},
	{"no_weight_map", `{"metadata": {"total_size": 4}}`, nil, "no weight_map"},
	{"empty_weight_map", `{"weight_map": {}}`, nil, "weight_map is empty"},
	{"weight_map_not_object", `{"weight_map": ["x.safetensors"]}`, nil, `weight_map: got "["`},
	{"shard_not_string", `{"weight_map": {"a": 1}}`, nil, `weight_map["a"]: got number 1, want a shard file name`},
	{"empty_tensor_name", `{"weight_map": {"": "x.safetensors"}}`, nil, `"" is not a tensor name`},
	{"metadata_not_object", `{"metadata": 3, "weight_map": {"a": "x.safetensors"}}`, nil, "metadata:"},
	{"dotdot", `{"weight_map": {"a": "../x.safetensors"}}`, ErrUnsafePath, `shard "../x.safetensors": not a plain relative path`},
	{"dotdot_inner", `{"weight_map": {"a": "sub/../../x.safetensors"}}`, ErrUnsafePath, "not a plain relative path"},
	{"absolute", `{"weight_map": {"a": "/etc/x.safetensors"}}`, ErrUnsafePath, "absolute path"},
	{"backslash", `{"weight_map": {"a": "..\\x.safetensors"}}`, ErrUnsafePath, "backslash"},
	{"dot_element", `{"weight_map": {"a": "./x.safetensors"}}`, ErrUnsafePath, "not a plain relative path"},
	{"empty_shard", `{"weight_map": {"a": ""}}`, ErrUnsafePath, "not a plain relative path"},
	{"pickle_shard", `{"weight_map": {"a": "pytorch_model.bin"}}`, ErrUnsafePath, "not a .safetensors file"},
}

func TestMalformedIndexCorpus(t *testing.T) {
	for _, tc := range malformedIndexCases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join("testdata", "malformed-index", tc.name+".json")
			if *update {
				if err := os.WriteFile(path, []byte(tc.json), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestMalformedIndexCorpus -update)", err)
			}
			if string(data) != tc.json {
				t.Fatalf("%s differs from its table row; run go test -run TestMalformedIndexCorpus -update", path)
			}
			ix, err := ReadIndex(bytes.NewReader(data), IndexFile)
			if err == nil {
				t.Fatalf("ReadIndex accepted it: %+v", ix)
			}
			var fe *FormatError
			if !errors.As(err, &fe) || fe.File != IndexFile {
				t.Errorf("error %v is not a *FormatError for %s", err, IndexFile)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestReadIndexValid(t *testing.T) {
	const doc = `{
  "metadata": {"total_size": 12345678901, "format": "pt", "nested": {"x": [1, 2]}},
  "extra": [1, {"y": null}],
  "weight_map": {
    "lm_head.weight": "model-00002-of-00002.safetensors",
    "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
    "model.norm.weight": "sub/model-00002-of-00002.safetensors"
  }
}`
	ix, err := ReadIndex(strings.NewReader(doc), IndexFile)
	if err != nil {
		t.Fatal(err)
	}
	wantMap := map[string]string{
		"lm_head.weight":            "model-00002-of-00002.safetensors",
		"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
		"model.norm.weight":         "sub/model-00002-of-00002.safetensors",
	}
	if !reflect.DeepEqual(ix.WeightMap, wantMap) {
		t.Errorf("WeightMap = %v", ix.WeightMap)
	}
	if n, ok := ix.TotalSize(); !ok || n != 12345678901 {
		t.Errorf("TotalSize = %d, %t", n, ok)
	}
	if ix.Metadata["format"] != "pt" {
		t.Errorf("Metadata = %v", ix.Metadata)
	}
	wantShards := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "sub/model-00002-of-00002.safetensors"}
	if got := ix.Shards(); !reflect.DeepEqual(got, wantShards) {
		t.Errorf("Shards = %v", got)
	}
}

func TestReadIndexTooLarge(t *testing.T) {
	big := `{"weight_map": {"a": "x.safetensors"}, "pad": "` + strings.Repeat("x", maxIndexSize) + `"}`
	_, err := ReadIndex(strings.NewReader(big), IndexFile)
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("got %v, want a size error", err)
	}
}

func TestWriteIndexRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), IndexFile)
	wm := map[string]string{"b": "model-00002-of-00002.safetensors", "a": "model-00001-of-00002.safetensors"}
	if err := sttest.WriteIndex(path, wm, 42); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ix, err := ReadIndex(f, path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ix.WeightMap, wm) {
		t.Errorf("WeightMap = %v", ix.WeightMap)
	}
	if n, _ := ix.TotalSize(); n != 42 {
		t.Errorf("total_size = %v", ix.Metadata["total_size"])
	}
	if _, isNum := ix.Metadata["total_size"].(json.Number); !isNum {
		t.Errorf("total_size is %T, want json.Number", ix.Metadata["total_size"])
	}
}
