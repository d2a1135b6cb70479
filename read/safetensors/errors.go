package safetensors

import (
	"errors"
	"fmt"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrNoWeights: the folder holds no weight files at all.
	ErrNoWeights = errors.New("no weight files found")
	// ErrPickleOnly: the folder only has pickle checkpoints (*.bin, *.pt, *.pth),
	// which phase0 never opens.
	ErrPickleOnly = errors.New("only pickle checkpoints (*.bin/*.pt/*.pth) found, no safetensors")
	// ErrMixedLayout: both model.safetensors and model.safetensors.index.json exist.
	ErrMixedLayout = errors.New("both a single-file checkpoint and a sharded index are present")
	// ErrUnsafePath: a shard path in the index leaves the model folder or is not a plain relative path.
	ErrUnsafePath = errors.New("unsafe shard path")
	// ErrMissingShard: the index names a shard file that does not exist.
	ErrMissingShard = errors.New("shard file missing")
	// ErrTensorNotInShard: the index assigns a tensor to a shard whose header lacks it.
	ErrTensorNotInShard = errors.New("tensor not in the shard the index assigns it to")
	// ErrTensorNotInIndex: a shard header holds a tensor the index does not list (for that shard).
	ErrTensorNotInIndex = errors.New("tensor in shard header but not in the index")
	// ErrDuplicateTensor: the same tensor name appears in two files.
	ErrDuplicateTensor = errors.New("tensor appears in more than one file")
	// ErrTruncated: a file is shorter than its header says.
	ErrTruncated = errors.New("file truncated")
	// ErrHeaderTooLarge: the header length exceeds MaxHeaderSize.
	ErrHeaderTooLarge = errors.New("header too large")
	// ErrDuplicateKey: a JSON object repeats a key.
	ErrDuplicateKey = errors.New("duplicate JSON key")
	// ErrNotRegular: a checkpoint file is a directory, FIFO, device or socket.
	ErrNotRegular = errors.New("not a regular file")
	// ErrUnknownDType: a tensor's dtype is not in the size table.
	ErrUnknownDType = errors.New("unknown dtype")
)

// FormatError reports a malformed header or index. Offset is the absolute
// byte offset in File near which the problem was found.
type FormatError struct {
	File   string
	Offset int64
	Reason string
	Err    error // optional sentinel, reachable through errors.Is
	// Gap is set when the problem is data bytes no tensor of the header
	// covers, for a caller that can say whose bytes they are.
	Gap *Gap
}

// Gap is a run of data bytes [Begin, End) (data offsets) that no tensor of
// the header covers: After is the tensor ending at Begin ("" at the
// start), Before the one beginning at End; Tensors are every tensor of
// the header, sorted by Begin.
type Gap struct {
	Begin, End    int64
	After, Before string
	Tensors       []Tensor
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("safetensors: %s: offset %d: %s", e.File, e.Offset, e.Reason)
}

func (e *FormatError) Unwrap() error { return e.Err }
