package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the testdata corpus files from their builders")

// rawFile is an 8-byte length, the header text and dataLen zero bytes.
func rawFile(header string, dataLen int) []byte {
	return rawLen(uint64(len(header)), header+strings.Repeat("\x00", dataLen))
}

// rawLen writes an arbitrary length prefix followed by rest.
func rawLen(n uint64, rest string) []byte {
	b := binary.LittleEndian.AppendUint64(nil, n)
	return append(b, rest...)
}

type malformedCase struct {
	name  string
	build func() []byte
	is    error  // sentinel the error must match, if any
	want  string // substring of the error message
}

var malformedCases = []malformedCase{
	{"too_short", func() []byte { return []byte{1, 0, 0, 0, 0} }, ErrTruncated, "too short"},
	{"header_too_large", func() []byte { return rawLen(MaxHeaderSize+1, "{}") }, ErrHeaderTooLarge, "exceeds the 100000000-byte cap"},
	{"header_len_huge", func() []byte { return rawLen(1<<63+5, "{}") }, ErrHeaderTooLarge, "exceeds"},
	{"header_past_eof", func() []byte { return rawLen(1000, `{"a":1}`) }, ErrTruncated, "runs past the end"},
	{"header_len_zero", func() []byte { return rawLen(0, "") }, nil, "cannot hold a JSON object"},
	{"not_object", func() []byte { return rawFile(`[1, 2]`, 0) }, nil, `header starts with '['`},
	{"leading_space", func() []byte { return rawFile(` {}`, 0) }, nil, `header starts with ' '`},
	{"invalid_json", func() []byte { return rawFile(`{"a":{"dtype":"F32",}}`, 0) }, nil, "header JSON"},
	{"unterminated", func() []byte { return rawFile(`{"a":{"dtype":"F32"`, 0) }, nil, "ends early"},
	{"invalid_utf8", func() []byte { return rawFile("{\"\xff\":1}", 0) }, nil, "not valid UTF-8"},
	{"trailing_garbage", func() []byte { return rawFile(`{}{}`, 0) }, nil, "after the header object"},
	{"duplicate_tensor", func() []byte {
		return rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, 2)
	}, ErrDuplicateKey, `key "a" appears twice`},
	{"duplicate_metadata", func() []byte { return rawFile(`{"__metadata__":{},"__metadata__":{}}`, 0) }, ErrDuplicateKey, `"__metadata__" appears twice`},
	{"duplicate_metadata_key", func() []byte { return rawFile(`{"__metadata__":{"f":"pt","f":"np"}}`, 0) }, ErrDuplicateKey, `key "f" appears twice`},
	{"duplicate_field", func() []byte {
		return rawFile(`{"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, 1)
	}, ErrDuplicateKey, "field dtype appears twice"},
	{"unknown_field", func() []byte {
		return rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"stride":[1]}}`, 1)
	}, nil, `unknown field "stride"`},
	{"missing_dtype", func() []byte { return rawFile(`{"a":{"shape":[1],"data_offsets":[0,1]}}`, 1) }, nil, "missing field dtype"},
	{"missing_shape", func() []byte { return rawFile(`{"a":{"dtype":"U8","data_offsets":[0,1]}}`, 1) }, nil, "missing field shape"},
	{"missing_offsets", func() []byte { return rawFile(`{"a":{"dtype":"U8","shape":[1]}}`, 1) }, nil, "missing field data_offsets"},
	{"tensor_not_object", func() []byte { return rawFile(`{"a":[1]}`, 0) }, nil, `tensor "a": got "[", want an object`},
	{"metadata_not_object", func() []byte { return rawFile(`{"__metadata__":["pt"]}`, 0) }, nil, "want an object of strings"},
	{"metadata_value_not_string", func() []byte { return rawFile(`{"__metadata__":{"n":1}}`, 0) }, nil, `__metadata__["n"]: got number 1, want a string`},
	{"unknown_dtype", func() []byte { return rawFile(`{"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}`, 16) }, ErrUnknownDType, `unknown dtype "F128"`},
	{"lowercase_dtype", func() []byte { return rawFile(`{"a":{"dtype":"float32","shape":[1],"data_offsets":[0,4]}}`, 4) }, ErrUnknownDType, `unknown dtype "float32"`},
	{"dtype_not_string", func() []byte { return rawFile(`{"a":{"dtype":4,"shape":[1],"data_offsets":[0,4]}}`, 4) }, nil, "dtype: got number 4, want a string"},
	{"shape_not_array", func() []byte { return rawFile(`{"a":{"dtype":"U8","shape":1,"data_offsets":[0,1]}}`, 1) }, nil, "shape: got number 1"},
	{"negative_dim", func() []byte { return rawFile(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}`, 0) }, nil, "shape[0] = -1 is negative"},
	{"float_dim", func() []byte { return rawFile(`{"a":{"dtype":"U8","shape":[2.0],"data_offsets":[0,2]}}`, 2) }, nil, "shape[0] = 2.0 is not an integer"},
	{"huge_dim", func() []byte {
		return rawFile(`{"a":{"dtype":"U8","shape":[99999999999999999999],"data_offsets":[0,2]}}`, 2)
	}, nil, "is not an integer in range"},
	{"nested_dim", func() []byte { return rawFile(`{"a":{"dtype":"U8","shape":[[1]],"data_offsets":[0,1]}}`, 1) }, nil, `shape[0]: got "["`},
	{"offsets_three_values", func() []byte { return rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}`, 1) }, nil, "data_offsets has 3 values"},
	{"offsets_negative", func() []byte { return rawFile(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[-1,-1]}}`, 0) }, nil, "data_offsets[0] = -1 is negative"},
	{"offsets_reversed", func() []byte { return rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,0]}}`, 1) }, nil, "begin is after end"},
	{"size_mismatch", func() []byte { return rawFile(`{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}}`, 12) }, nil, "needs 16 bytes but data_offsets [0, 12] span 12"},
	{"element_overflow", func() []byte {
		return rawFile(`{"a":{"dtype":"U8","shape":[4294967296,4294967296,2],"data_offsets":[0,0]}}`, 0)
	}, nil, "element count overflows"},
	{"byte_overflow", func() []byte {
		return rawFile(`{"a":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}}`, 0)
	}, nil, "byte size overflows"},
	{"gap", func() []byte {
		return rawFile(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}}`, 12)
	}, nil, `tensor "b": gap: data begins at 8 but the previous tensor ends at 4`},
	{"not_from_zero", func() []byte { return rawFile(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}}`, 8) }, nil, "gap: data begins at 4"},
	{"overlap", func() []byte {
		return rawFile(`{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[8],"data_offsets":[4,12]}}`, 12)
	}, nil, `tensor "b": data [4, 12] overlaps tensor "a" ending at 8`},
	{"data_truncated", func() []byte { return rawFile(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, 8) }, ErrTruncated, "tensor data ends at 16 but the file has only 8 data bytes"},
	{"trailing_bytes", func() []byte { return rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 16) }, nil, "8 trailing bytes after the tensor data"},
}

func TestMalformedCorpus(t *testing.T) {
	for _, tc := range malformedCases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join("testdata", "malformed", tc.name+".safetensors")
			want := tc.build()
			if *update {
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestMalformedCorpus -update to create it)", err)
			}
			if !bytes.Equal(data, want) {
				t.Fatalf("%s differs from its builder; run go test -run TestMalformedCorpus -update", path)
			}
			h, err := ReadHeader(bytes.NewReader(data), int64(len(data)), tc.name+".safetensors")
			if err == nil {
				t.Fatalf("ReadHeader accepted it: %+v", h)
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is %T, want *FormatError", err, err)
			}
			if fe.File != tc.name+".safetensors" {
				t.Errorf("FormatError.File = %q", fe.File)
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

// TestMalformedCorpusComplete keeps the folder and the table in step.
func TestMalformedCorpusComplete(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "malformed", "*.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, tc := range malformedCases {
		known[tc.name+".safetensors"] = true
	}
	for _, f := range files {
		if !known[filepath.Base(f)] {
			t.Errorf("%s has no row in malformedCases", f)
		}
	}
	if len(files) != len(malformedCases) {
		t.Errorf("%d corpus files for %d cases", len(files), len(malformedCases))
	}
}

func TestFormatErrorMessage(t *testing.T) {
	data := rawFile(`{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}}`, 12)
	_, err := ReadHeader(bytes.NewReader(data), int64(len(data)), "shard-1.safetensors")
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("got %v", err)
	}
	if fe.Offset < 8 || fe.Offset > int64(len(data)) {
		t.Errorf("offset %d outside the header", fe.Offset)
	}
	want := `safetensors: shard-1.safetensors: offset 9: tensor "a": shape [2 2] of F32 needs 16 bytes but data_offsets [0, 12] span 12`
	if err.Error() != want {
		t.Errorf("message\n got %s\nwant %s", err, want)
	}
}

func TestReadHeaderValid(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want Header // DataStart is checked against 8+header length
	}{
		{
			name: "empty object",
			data: rawFile(`{}`, 0),
			want: Header{Tensors: []Tensor{}},
		},
		{
			name: "padded with spaces, metadata, out-of-order keys",
			data: rawFile(`{"b":{"shape":[2],"data_offsets":[4,8],"dtype":"BF16"},"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}     `, 8),
			want: Header{
				Tensors:  []Tensor{{Name: "a", DType: "F32", Shape: []int64{1}, Begin: 0, End: 4}, {Name: "b", DType: "BF16", Shape: []int64{2}, Begin: 4, End: 8}},
				Metadata: map[string]string{"format": "pt"},
			},
		},
		{
			name: "scalar and zero-sized tensors",
			data: rawFile(`{"s":{"dtype":"I64","shape":[],"data_offsets":[0,8]},"z":{"dtype":"F16","shape":[0,3],"data_offsets":[8,8]},"u":{"dtype":"U8","shape":[3],"data_offsets":[8,11]},"__metadata__":null}`, 11),
			want: Header{Tensors: []Tensor{
				{Name: "s", DType: "I64", Shape: []int64{}, Begin: 0, End: 8},
				{Name: "z", DType: "F16", Shape: []int64{0, 3}, Begin: 8, End: 8},
				{Name: "u", DType: "U8", Shape: []int64{3}, Begin: 8, End: 11},
			}},
		},
		{
			name: "every dtype",
			data: rawFile(`{"b":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1]},"e":{"dtype":"F8_E8M0","shape":[1],"data_offsets":[1,2]},"x":{"dtype":"F8_E5M2","shape":[1],"data_offsets":[2,3]},"y":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[3,4]},"c":{"dtype":"I8","shape":[1],"data_offsets":[4,5]},"d":{"dtype":"U16","shape":[1],"data_offsets":[5,7]},"f":{"dtype":"I16","shape":[1],"data_offsets":[7,9]},"g":{"dtype":"U32","shape":[1],"data_offsets":[9,13]},"h":{"dtype":"I32","shape":[1],"data_offsets":[13,17]},"i":{"dtype":"U64","shape":[1],"data_offsets":[17,25]},"j":{"dtype":"F64","shape":[1],"data_offsets":[25,33]}}`, 33),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ReadHeader(bytes.NewReader(tc.data), int64(len(tc.data)), "m.safetensors")
			if err != nil {
				t.Fatal(err)
			}
			hdrLen := int64(binary.LittleEndian.Uint64(tc.data))
			if h.DataStart != 8+hdrLen {
				t.Errorf("DataStart = %d, want %d", h.DataStart, 8+hdrLen)
			}
			if tc.want.Tensors == nil {
				return // only checks that it parses
			}
			for i := range tc.want.Tensors {
				w := &tc.want.Tensors[i]
				w.File = "m.safetensors"
				w.Begin += h.DataStart
				w.End += h.DataStart
			}
			if !reflect.DeepEqual(h.Tensors, tc.want.Tensors) {
				t.Errorf("tensors\n got %+v\nwant %+v", h.Tensors, tc.want.Tensors)
			}
			if !reflect.DeepEqual(h.Metadata, tc.want.Metadata) {
				t.Errorf("metadata = %v, want %v", h.Metadata, tc.want.Metadata)
			}
		})
	}
}

func TestDTypeSize(t *testing.T) {
	for dtype, want := range map[string]int64{
		"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
		"I16": 2, "U16": 2, "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8,
	} {
		if got, ok := DTypeSize(dtype); !ok || got != want {
			t.Errorf("DTypeSize(%q) = %d, %t; want %d, true", dtype, got, ok, want)
		}
	}
	for _, dtype := range []string{"", "bf16", "F4", "C64", "float32"} {
		if _, ok := DTypeSize(dtype); ok {
			t.Errorf("DTypeSize(%q) reported known", dtype)
		}
	}
}

// TestGapIsDescribed: a gap's FormatError carries the uncovered bytes, the
// tensors around them and the header's tensors, for a caller that can say
// whose bytes they are.
func TestGapIsDescribed(t *testing.T) {
	b := rawFile(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"c":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}}`, 12)
	_, err := ReadHeader(bytes.NewReader(b), int64(len(b)), "x.safetensors")
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Gap == nil {
		t.Fatalf("%v, want a FormatError with a Gap", err)
	}
	if g := fe.Gap; g.Begin != 4 || g.End != 8 || g.After != "a" || g.Before != "c" || len(g.Tensors) != 2 || g.Tensors[1].Name != "c" {
		t.Errorf("gap %+v", *g)
	}
}
