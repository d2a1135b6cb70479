// Package compare judges a candidate recording against the reference: the
// later phases' correctness gate (upstream verify's lockstep top-k inclusion,
// after vLLM's check_logprobs_close) per prompt, and the diagnosis lens's
// per-layer cosine / error table, which informs and never fails.
package compare

import (
	"errors"
	"fmt"
	"slices"

	"phase0/gate/verdict"
)

// ErrMismatch marks inputs that cannot be compared (different prompts,
// tokenizer, steps, k, or a broken reference): exit 2, not a FAIL.
var ErrMismatch = errors.New("reference and candidate cannot be compared")

// Sequence is one side's greedy continuation of one prompt.
type Sequence struct {
	Chosen    []int64
	TopK      [][]int64
	Nonfinite []int64 // per step; nil means all finite
}

// Check is one prompt's lockstep result (fields as upstream's TopKCheckRecord).
type Check struct {
	Prompt    int            `json:"prompt"`
	Text      string         `json:"text"`
	Status    verdict.Status `json:"status"`
	Steps     int            `json:"steps"`
	K         int            `json:"k"`
	Agreed    int            `json:"agreed_steps"` // steps before the divergence (all of them when none)
	Divergent *int           `json:"divergence_step"`
	// At the divergence: each side's chosen token, each side's top-k, and the
	// 1-based rank of each side's token in the other's top-k (nil: absent).
	CandidateChosen    *int64  `json:"candidate_chosen,omitempty"`
	ReferenceChosen    *int64  `json:"reference_chosen,omitempty"`
	CandidateTopK      []int64 `json:"candidate_topk,omitempty"`
	ReferenceTopK      []int64 `json:"reference_topk,omitempty"`
	CandidateRankInRef *int    `json:"candidate_rank_in_reference,omitempty"`
	ReferenceRankInCan *int    `json:"reference_rank_in_candidate,omitempty"`
	Reason             string  `json:"reason,omitempty"`
}

// Lockstep walks both continuations step by step. At the first step where
// the chosen tokens differ, each side's token must be in the other side's
// top-k, else FAIL; the walk stops there either way, because after it each
// side feeds its own token and the steps no longer pair up. A candidate step
// with non-finite logits, before or at the divergence, is a FAIL at that step.
//
// Upstream decodes exactly the same number of steps on both sides; unequal
// lengths, a top-k row shorter than k, or non-finite reference logits are
// ErrMismatch (could not evaluate), never a silent pass over a prefix.
func Lockstep(ref, cand Sequence, k int) (Check, error) {
	c := Check{K: k, Status: verdict.Pass}
	n := len(ref.Chosen)
	if len(cand.Chosen) != n || len(ref.TopK) != n || len(cand.TopK) != n {
		return c, fmt.Errorf("%w: reference has %d steps (%d top-k rows), candidate %d steps (%d top-k rows)",
			ErrMismatch, n, len(ref.TopK), len(cand.Chosen), len(cand.TopK))
	}
	c.Steps = n
	for i := range n {
		if len(ref.TopK[i]) < k || len(cand.TopK[i]) < k {
			return c, fmt.Errorf("%w: step %d has %d reference and %d candidate top-k ids, want %d", ErrMismatch, i, len(ref.TopK[i]), len(cand.TopK[i]), k)
		}
		if bad := at(ref.Nonfinite, i); bad > 0 {
			return c, fmt.Errorf("%w: the reference's logits at step %d have %d non-finite values", ErrMismatch, i, bad)
		}
		if bad := at(cand.Nonfinite, i); bad > 0 {
			c.Status, c.Divergent = verdict.Fail, ptr(i)
			c.Reason = fmt.Sprintf("candidate logits at step %d have %d non-finite values (NaN/Inf)", i, bad)
			c.Agreed = i
			return c, nil
		}
		if ref.Chosen[i] == cand.Chosen[i] {
			continue
		}
		rt, ct := ref.TopK[i][:k], cand.TopK[i][:k]
		c.Divergent, c.Agreed = ptr(i), i
		c.CandidateChosen, c.ReferenceChosen = ptr(cand.Chosen[i]), ptr(ref.Chosen[i])
		c.CandidateTopK, c.ReferenceTopK = slices.Clone(ct), slices.Clone(rt)
		c.CandidateRankInRef, c.ReferenceRankInCan = rank(rt, cand.Chosen[i]), rank(ct, ref.Chosen[i])
		var why []string
		if c.CandidateRankInRef == nil {
			why = append(why, fmt.Sprintf("candidate chose %d, not in the reference's top-%d %v", cand.Chosen[i], k, rt))
		}
		if c.ReferenceRankInCan == nil {
			why = append(why, fmt.Sprintf("reference chose %d, not in the candidate's top-%d %v", ref.Chosen[i], k, ct))
		}
		if len(why) > 0 {
			c.Status = verdict.Fail
			c.Reason = fmt.Sprintf("step %d: %s", i, joinSemi(why))
		}
		return c, nil
	}
	c.Agreed = n
	return c, nil
}

func at(xs []int64, i int) int64 {
	if i < len(xs) {
		return xs[i]
	}
	return 0
}

func rank(top []int64, id int64) *int {
	if i := slices.Index(top, id); i >= 0 {
		return ptr(i + 1)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

func joinSemi(parts []string) string {
	out := parts[0]
	for _, p := range parts[1:] {
		out += "; " + p
	}
	return out
}
