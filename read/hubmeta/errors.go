package hubmeta

import (
	"errors"
	"fmt"
)

// Sentinel errors; match them with errors.Is. Every error Resolve and
// Weights return for a hub answer is a *HubError wrapping one of these.
var (
	// ErrNotFound: the repository, revision or file does not exist (404).
	ErrNotFound = errors.New("not found on the hub")
	// ErrGated: the repository is gated and the request was not granted access.
	ErrGated = errors.New("gated repository")
	// ErrUnauthorized: 401 for a repository that is missing or private, or a refused token.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: 403 other than a gate: the token lacks a permission.
	ErrForbidden = errors.New("forbidden")
	// ErrRateLimited: 429 after every allowed retry.
	ErrRateLimited = errors.New("rate limited")
	// ErrServer: 5xx or a broken connection after every allowed retry.
	ErrServer = errors.New("hub server error")
	// ErrOffline: HF_HUB_OFFLINE is set and the metadata is not cached.
	ErrOffline = errors.New("offline and not cached")
	// ErrNoSafetensors: neither model.safetensors nor its index exists.
	ErrNoSafetensors = errors.New("no safetensors checkpoint")
	// ErrTooLarge: a file exceeds the bound phase0 reads.
	ErrTooLarge = errors.New("file too large")
	// ErrBadResponse: the answer is not what the hub protocol promises
	// (no commit header, a range other than the one asked for).
	ErrBadResponse = errors.New("unexpected hub response")
)

// HubError is a failed request, with what phase0 asked for and what to do.
type HubError struct {
	Repo   string // org/name
	File   string // path in the repository, "" for the repository itself
	Status int    // HTTP status, 0 when no answer came
	Code   string // the hub's X-Error-Code, when sent
	Msg    string // what happened and what to do, for the user
	Err    error  // one of the sentinels above
}

func (e *HubError) Error() string {
	where := e.Repo
	if e.File != "" {
		where += ": " + e.File
	}
	if e.Status != 0 {
		return fmt.Sprintf("hub: %s: %s (HTTP %d)", where, e.Msg, e.Status)
	}
	return fmt.Sprintf("hub: %s: %s", where, e.Msg)
}

func (e *HubError) Unwrap() error { return e.Err }
