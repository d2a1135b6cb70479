package compare

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"phase0/gate/reference"
	"phase0/gate/verdict"
	"phase0/internal/sttest"
)

// seq builds a continuation whose step i chose chosen[i] with top-k topk[i].
func seq(chosen []int64, topk ...[]int64) Sequence {
	return Sequence{Chosen: chosen, TopK: topk}
}

func TestLockstepTable(t *testing.T) {
	ref := seq([]int64{7, 8, 9}, []int64{7, 1, 2, 3, 4}, []int64{8, 5, 6, 10, 11}, []int64{9, 1, 2, 3, 4})
	for _, tc := range []struct {
		name       string
		cand       Sequence
		status     verdict.Status
		divergence int // -1: none
		reason     string
		mismatch   bool
	}{
		{"identical", seq([]int64{7, 8, 9}, []int64{7, 1, 2, 3, 4}, []int64{8, 5, 6, 10, 11}, []int64{9, 1, 2, 3, 4}), verdict.Pass, -1, "", false},
		{"same tokens, other top-k order", seq([]int64{7, 8, 9}, []int64{7, 4, 3, 2, 1}, []int64{8, 99, 98, 97, 96}, []int64{9, 4, 3, 2, 1}), verdict.Pass, -1, "", false},
		{"divergence inside top-5 both ways", seq([]int64{7, 5, 42}, []int64{7, 1, 2, 3, 4}, []int64{5, 8, 6, 10, 11}, []int64{42, 0, 0, 0, 0}), verdict.Pass, 1, "", false},
		{"candidate's token outside reference top-5", seq([]int64{7, 77, 9}, []int64{7, 1, 2, 3, 4}, []int64{77, 8, 6, 10, 11}, []int64{9, 1, 2, 3, 4}), verdict.Fail, 1, "candidate chose 77, not in the reference's top-5", false},
		{"reference's token outside candidate top-5", seq([]int64{7, 5, 9}, []int64{7, 1, 2, 3, 4}, []int64{5, 6, 10, 11, 12}, []int64{9, 1, 2, 3, 4}), verdict.Fail, 1, "reference chose 8, not in the candidate's top-5", false},
		{"divergence outside both ways", seq([]int64{70, 8, 9}, []int64{70, 71, 72, 73, 74}, ref.TopK[1], ref.TopK[2]), verdict.Fail, 0,
			"step 0: candidate chose 70, not in the reference's top-5 [7 1 2 3 4]; reference chose 7, not in the candidate's top-5 [70 71 72 73 74]", false},
		{"length mismatch", seq([]int64{7, 8}, []int64{7, 1, 2, 3, 4}, []int64{8, 5, 6, 10, 11}), "", 0, "", true},
		{"NaN logits in the candidate", Sequence{Chosen: []int64{7, 8, 9}, TopK: ref.TopK, Nonfinite: []int64{0, 512, 0}}, verdict.Fail, 1, "step 1 have 512 non-finite values", false},
		{"NaN after a failing divergence is not reached", Sequence{Chosen: []int64{7, 66, 9}, TopK: [][]int64{{7, 1, 2, 3, 4}, {66, 1, 2, 3, 4}, {9, 1, 2, 3, 4}}, Nonfinite: []int64{0, 0, 9}}, verdict.Fail, 1, "not in the reference's top-5", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Lockstep(ref, tc.cand, 5)
			if tc.mismatch {
				if !errors.Is(err, ErrMismatch) {
					t.Fatalf("err %v, want ErrMismatch", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Status != tc.status {
				t.Errorf("status %s, want %s (%+v)", c.Status, tc.status, c)
			}
			if tc.divergence < 0 && c.Divergent != nil || tc.divergence >= 0 && (c.Divergent == nil || *c.Divergent != tc.divergence) {
				t.Errorf("divergence %v, want %d", c.Divergent, tc.divergence)
			}
			if !strings.Contains(c.Reason, tc.reason) {
				t.Errorf("reason %q lacks %q", c.Reason, tc.reason)
			}
			if tc.name == "divergence inside top-5 both ways" && (*c.CandidateRankInRef != 2 || *c.ReferenceRankInCan != 2) {
				t.Errorf("ranks %d/%d, want 2 (5 in the reference's top-5) and 2 (8 in the candidate's)", *c.CandidateRankInRef, *c.ReferenceRankInCan)
			}
		})
	}
	if _, err := Lockstep(Sequence{Chosen: []int64{1}, TopK: [][]int64{{1, 2, 3, 4, 5}}, Nonfinite: []int64{3}}, seq([]int64{1}, []int64{1, 2, 3, 4, 5}), 5); !errors.Is(err, ErrMismatch) {
		t.Errorf("NaN in the reference: err %v, want ErrMismatch", err)
	}
}

// recording is what writeRecording puts on disk.
type recording struct {
	tokenizer string
	prompts   []string
	tokens    [][]int64
	chosen    [][]int64
	topk      [][][]int64
	ffn       [][]float32 // per layer, 2 positions × 2
	role      string      // "": reference
	// edit changes the tensors before they are written (nil: as recorded).
	edit func([]sttest.WriteTensor) []sttest.WriteTensor
}

func i64(xs []int64) []byte {
	b := make([]byte, 8*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

func f32(xs []float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// writeRecording writes a real recording folder (safetensors by the test
// writer, not by the code under test) and returns it.
func writeRecording(t *testing.T, rec recording) string {
	t.Helper()
	dir := t.TempDir()
	steps, k := len(rec.chosen[0]), len(rec.topk[0][0])
	var ts []sttest.WriteTensor
	for i := range rec.prompts {
		p := "prompt." + strconv.Itoa(i) + "."
		var flat []int64
		for _, row := range rec.topk[i] {
			flat = append(flat, row...)
		}
		lp := make([]float32, steps*k)
		ts = append(ts,
			sttest.WriteTensor{Name: p + "tokens", DType: "I64", Shape: []int64{int64(len(rec.tokens[i]))}, Data: i64(rec.tokens[i])},
			sttest.WriteTensor{Name: p + "chosen", DType: "I64", Shape: []int64{int64(steps)}, Data: i64(rec.chosen[i])},
			sttest.WriteTensor{Name: p + "topk_ids", DType: "I64", Shape: []int64{int64(steps), int64(k)}, Data: i64(flat)},
			sttest.WriteTensor{Name: p + "topk_logprobs", DType: "F32", Shape: []int64{int64(steps), int64(k)}, Data: f32(lp)},
			sttest.WriteTensor{Name: p + "nonfinite", DType: "I64", Shape: []int64{int64(steps)}, Data: i64(make([]int64, steps))},
		)
	}
	for l, v := range rec.ffn {
		ts = append(ts, sttest.WriteTensor{Name: "diagnosis.layer." + strconv.Itoa(l) + ".ffn_out", DType: "F32", Shape: []int64{2, 2}, Data: f32(v)})
	}
	if rec.edit != nil {
		ts = rec.edit(ts)
	}
	path := filepath.Join(dir, reference.TensorsFile)
	if err := sttest.WriteFile(path, ts, nil); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	sum := sha256.Sum256(data)
	role := rec.role
	if role == "" {
		role = reference.RoleReference
	}
	meta, _ := json.Marshal(reference.Meta{Format: reference.Format, Role: role, Runner: "test", Dtype: "bfloat16", TokenizerSHA256: rec.tokenizer,
		Prompts: rec.prompts, DecodeSteps: steps, TopK: k, TensorsSHA256: hex.EncodeToString(sum[:]), TensorsBytes: int64(len(data))})
	if err := os.WriteFile(filepath.Join(dir, reference.MetaFile), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func baseRecording() recording {
	return recording{
		tokenizer: "abc", prompts: []string{"The capital of France is", "One, two,"},
		tokens: [][]int64{{1, 5, 6}, {1, 9}},
		chosen: [][]int64{{7, 8}, {3, 4}},
		topk:   [][][]int64{{{7, 1, 2, 3, 4}, {8, 1, 2, 3, 4}}, {{3, 1, 2, 5, 6}, {4, 1, 2, 3, 5}}},
		ffn:    [][]float32{{1, 0, 0, 1}, {1, 1, 1, -1}},
	}
}

func TestFilesVerdictsAndExitCodes(t *testing.T) {
	ref := writeRecording(t, baseRecording())
	for _, tc := range []struct {
		name   string
		edit   func(*recording)
		status verdict.Status
		want   string
	}{
		{"identical", func(*recording) {}, verdict.Pass, "2 identical, 0 diverge"},
		{"divergence inside", func(r *recording) { r.chosen[1][1], r.topk[1][1] = 5, []int64{5, 4, 1, 2, 3} }, verdict.Pass, "1 diverge inside the top-5"},
		{"divergence outside", func(r *recording) { r.chosen[0][0], r.topk[0][0] = 99, []int64{99, 98, 97, 96, 95} }, verdict.Fail, "1 of 2 prompts fail"},
		{"other tokenizer", func(r *recording) { r.tokenizer = "xyz" }, verdict.Error, "tokenizer checksum abc in the reference, xyz in the candidate"},
		{"other prompt", func(r *recording) { r.prompts[1] = "One, two, three," }, verdict.Error, "prompts differ"},
		{"other token ids", func(r *recording) { r.tokens[0] = []int64{1, 5} }, verdict.Error, "prompt 0 token ids differ"},
		{"fewer steps", func(r *recording) {
			r.chosen = [][]int64{{7}, {3}}
			r.topk = [][][]int64{{{7, 1, 2, 3, 4}}, {{3, 1, 2, 5, 6}}}
		}, verdict.Error, "reference has 2 steps of top-5, candidate 1 steps of top-5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := baseRecording()
			tc.edit(&rec)
			r := Files(ref, writeRecording(t, rec))
			if r.Status != tc.status || !strings.Contains(r.Summary, tc.want) {
				t.Fatalf("status %s, summary %q; want %s containing %q", r.Status, r.Summary, tc.status, tc.want)
			}
			if want := map[verdict.Status]int{verdict.Pass: 0, verdict.Fail: 1, verdict.Error: 2}[tc.status]; r.ExitCode() != want {
				t.Errorf("exit %d, want %d", r.ExitCode(), want)
			}
			if _, err := json.Marshal(r); err != nil {
				t.Errorf("result does not encode: %v", err)
			}
		})
	}
}

// TestFilesRefusesMalformedRecordings: a value or a name no recorder writes,
// on either side, is "could not compare" (exit 2) naming the tensor or field,
// the value and what is allowed; never a verdict.
func TestFilesRefusesMalformedRecordings(t *testing.T) {
	replace := func(name string, data []byte) func([]sttest.WriteTensor) []sttest.WriteTensor {
		return func(ts []sttest.WriteTensor) []sttest.WriteTensor {
			for i := range ts {
				if ts[i].Name == name {
					ts[i].Data = data
				}
			}
			return ts
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*recording)
		want string
	}{
		{"negative nonfinite", func(r *recording) { r.edit = replace("prompt.1.nonfinite", i64([]int64{0, -512})) },
			"tensor prompt.1.nonfinite[1] is -512: a count of non-finite logits, want >= 0"},
		{"+Inf log-probability with nonfinite 0", func(r *recording) {
			r.edit = replace("prompt.0.topk_logprobs", f32([]float32{0, -1, -2, -3, -4, -0.5, float32(math.Inf(1)), -2, -3, -4}))
		}, "tensor prompt.0.topk_logprobs[1][1] is +Inf while prompt.0.nonfinite[1] is 0: the log-probability of finite logits is finite and <= 0"},
		{"negative top-k id", func(r *recording) { r.topk[0][1] = []int64{8, 1, -2, 3, 4} },
			"tensor prompt.0.topk_ids[1][2] is -2: a token id, want >= 0"},
		{"unknown tensor", func(r *recording) {
			r.edit = func(ts []sttest.WriteTensor) []sttest.WriteTensor {
				return append(ts, sttest.WriteTensor{Name: "prompt.0.hidden", DType: "F32", Shape: []int64{1}, Data: f32([]float32{1})})
			}
		}, "tensor prompt.0.hidden is not part of the format"},
		{"unknown role", func(r *recording) { r.role = "npu" }, `role "npu", want "reference" or "candidate"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good := writeRecording(t, baseRecording())
			rec := baseRecording()
			tc.edit(&rec)
			bad := writeRecording(t, rec)
			for side, dirs := range map[string][2]string{"candidate": {good, bad}, "reference": {bad, good}} {
				r := Files(dirs[0], dirs[1])
				if r.Status != verdict.Error || r.ExitCode() != 2 || !strings.HasPrefix(r.Error, side+": ") || !strings.Contains(r.Error, tc.want) {
					t.Errorf("malformed %s: status %s, exit %d, error %q; want ERROR, exit 2, naming %q", side, r.Status, r.ExitCode(), r.Error, tc.want)
				}
			}
		})
	}
	// A candidate recorded by another runner reads, with other files beside it.
	rec := baseRecording()
	rec.role = reference.RoleCandidate
	cand := writeRecording(t, rec)
	if err := os.WriteFile(filepath.Join(cand, "sources.json"), []byte(`{"runner": "npu"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := Files(writeRecording(t, baseRecording()), cand); r.Status != verdict.Pass {
		t.Errorf("a candidate with a sources.json: %s", r.Text())
	}
}

func TestTableCosineAndErrors(t *testing.T) {
	rec := baseRecording()
	ref := writeRecording(t, rec)
	rec.ffn[1] = []float32{1, 1, -1, 1} // position 1 is (-1,1) against the reference's (1,-1)
	r := Files(ref, writeRecording(t, rec))
	if r.Status != verdict.Pass || len(r.Layers) != 2 {
		t.Fatalf("%s, %d layers: %s", r.Status, len(r.Layers), r.Text())
	}
	l0, l1 := r.Layers[0], r.Layers[1]
	if l0.CosMin != 1 || l0.MaxAbs != 0 {
		t.Errorf("identical layer: cos min %v, max abs %v", l0.CosMin, l0.MaxAbs)
	}
	// Position 0 identical (cos 1), position 1 opposite (cos -1).
	if math.Abs(float64(l1.CosMin)+1) > 1e-9 || math.Abs(float64(l1.CosMean)) > 1e-9 || l1.MaxAbs != 2 || l1.MeanAbs != 1 {
		t.Errorf("layer 1: %+v", l1)
	}
	if !strings.Contains(r.Text(), "ffn_out") {
		t.Errorf("text lacks the table:\n%s", r.Text())
	}
}

func TestFilesRefusesTamperedTensors(t *testing.T) {
	ref := writeRecording(t, baseRecording())
	f, err := os.OpenFile(filepath.Join(ref, reference.TensorsFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0})
	f.Close()
	r := Files(ref, ref)
	if r.Status != verdict.Error || !strings.Contains(r.Error, "partial or mixed recording") {
		t.Errorf("status %s, error %q", r.Status, r.Error)
	}
}
