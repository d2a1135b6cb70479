package modellist

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"

	"phase0/internal/boundedfile"
)

// MaxShards bounds N in --shard I/N: more jobs than this is not a CI matrix
// anyone runs, and a typo (1/10000000) should say so rather than run nothing.
const MaxShards = 1024

// Shard is one part I of N (1 ≤ I ≤ N) of a list, for spreading a list over
// N CI jobs. The zero Shard is the whole list.
type Shard struct {
	I, N int
}

// shardInt is a base-10 integer as the settings read one: no '+', no
// leading zero (01, -0), no space.
var shardInt = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)

// ParseShard reads "I/N": base-10 integers, 1 ≤ I ≤ N ≤ MaxShards.
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %s: want I/N, e.g. 2/4", boundedfile.Quote(s))
	}
	si, err1 := strconv.Atoi(i)
	sn, err2 := strconv.Atoi(n)
	if err1 != nil || err2 != nil || !shardInt.MatchString(i) || !shardInt.MatchString(n) {
		return Shard{}, fmt.Errorf("shard %s: want I/N with I and N base-10 integers, e.g. 2/4", boundedfile.Quote(s))
	}
	if sn < 1 || sn > MaxShards {
		return Shard{}, fmt.Errorf("shard %s: N is %d, want 1 to %d", boundedfile.Quote(s), sn, MaxShards)
	}
	if si < 1 || si > sn {
		return Shard{}, fmt.Errorf("shard %s: I is %d, want 1 to N (%d)", boundedfile.Quote(s), si, sn)
	}
	return Shard{si, sn}, nil
}

// String is "I/N", or "" for the whole list.
func (s Shard) String() string {
	if s.N == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// Of is the shard (1..n) an entry belongs to: FNV-1a (32-bit) of its model
// text, as written, mod n, plus 1. It depends on the entry alone, so a model
// keeps its shard when lines are appended, inserted, removed or reordered
// around it, and a CI job keeps meeting the same models (its caches stay
// warm); the price is that shards are balanced by chance, not exactly.
func Of(e Entry, n int) int {
	h := fnv.New32a()
	h.Write([]byte(e.Arg))
	return int(h.Sum32()%uint32(n)) + 1
}

// Select keeps the entries in shard s, in list order; the zero Shard keeps
// all of them.
func (s Shard) Select(entries []Entry) []Entry {
	if s.N == 0 {
		return entries
	}
	out := []Entry{}
	for _, e := range entries {
		if Of(e, s.N) == s.I {
			out = append(out, e)
		}
	}
	return out
}
