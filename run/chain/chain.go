// Package chain is the stage engine: a command's named stages, run in order
// over a run's state, each returning its outcome (status, one-line detail)
// and an error that ends the chain. The state is the caller's (the bf16
// run's, run/orchestrator; a quantized key's, run/quantkey, which wraps it
// and lifts the shared stages onto its own: Lift).
package chain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"phase0/gate/verdict"
	"phase0/output/report"
)

// ErrInterrupted marks a run stopped by SIGINT/SIGTERM/SIGHUP: exit 130,
// and nothing recorded.
var ErrInterrupted = errors.New("interrupted")

// Outcome is what a stage reports in its progress line and the report's
// stage list; Warnings join the report's; Done ends the chain with the
// command answered (a reused verdict).
type Outcome struct {
	Status   verdict.Status
	Detail   string
	Warnings []string
	Done     bool
}

// A Stage is one named step over a state S. run returns the stage's
// outcome; an error means the model could not be evaluated and ends the
// chain. fn is the stage's own function, which run calls (its name is the
// stage's: the packages' stage-name tests read it through Func).
type Stage[S any] struct {
	name string
	// when, if set, says whether the stage applies; a false answer records
	// the stage as SKIPPED with the reason.
	when func(S) (bool, string)
	run  func(context.Context, S) (Outcome, error)
	fn   any
	// afterAnswer marks a stage that completes an answer given early (a
	// reused verdict): it runs only after a stage answered the command,
	// and is left out of a chain that runs in full, or when its condition
	// says there is nothing to complete.
	afterAnswer bool
}

// Produce is a stage whose function returns a result; keep says where the
// state holds it for the stages after it and the report. The result is kept
// even when the stage errs: a partial one (a reference that failed to
// record) is what the report shows.
func Produce[S, R any](name string, fn func(context.Context, S) (R, Outcome, error), keep func(S, R)) Stage[S] {
	return Stage[S]{name: name, fn: fn, run: func(ctx context.Context, st S) (Outcome, error) {
		r, out, err := fn(ctx, st)
		keep(st, r)
		return out, err
	}}
}

// Check is a stage with no result of its own: it checks the settings or the
// machine.
func Check[S any](name string, fn func(context.Context, S) (Outcome, error)) Stage[S] {
	return Stage[S]{name: name, fn: fn, run: fn}
}

// OnlyIf makes the stage conditional: when says whether it applies.
func (sg Stage[S]) OnlyIf(when func(S) (bool, string)) Stage[S] {
	sg.when = when
	return sg
}

// AfterAnswering makes the stage complete an answer given early: it runs
// only when an earlier stage answered the command (a reused verdict).
func (sg Stage[S]) AfterAnswering() Stage[S] {
	sg.afterAnswer = true
	return sg
}

// Name and Func are the stage's name and its own function.
func (sg Stage[S]) Name() string { return sg.name }
func (sg Stage[S]) Func() any    { return sg.fn }

// Lift is a stage over state C run over a state S that wraps one (core
// says which): a shared stage in a route's own list.
func Lift[S, C any](sg Stage[C], core func(S) C) Stage[S] {
	out := Stage[S]{name: sg.name, fn: sg.fn, afterAnswer: sg.afterAnswer, run: func(ctx context.Context, st S) (Outcome, error) { return sg.run(ctx, core(st)) }}
	if sg.when != nil {
		out.when = func(st S) (bool, string) { return sg.when(core(st)) }
	}
	return out
}

// Run runs the stages over st in order until one errors, the model is
// rejected, a stage answers the command, or the context ends. Each stage
// run or skipped goes to record, with its warnings, as it ends; the error
// that stopped the chain (could not evaluate, or ErrInterrupted) is
// returned.
func Run[S any](ctx context.Context, st S, stages []Stage[S], record func(sg report.Stage, warnings []string)) error {
	answered := false
	for _, sg := range stages {
		if sg.afterAnswer != answered {
			continue
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w before %s: %w", ErrInterrupted, sg.name, context.Cause(ctx))
		}
		if sg.when != nil {
			if ok, why := sg.when(st); !ok {
				if !sg.afterAnswer { // a completion with nothing to complete is not listed
					record(report.Stage{Name: sg.name, Status: verdict.Skip, Detail: why}, nil)
				}
				continue
			}
		}
		begin := time.Now()
		out, err := sg.run(ctx, st)
		if err != nil {
			if ctx.Err() != nil && !errors.Is(err, ErrInterrupted) {
				err = fmt.Errorf("%w in %s: %w", ErrInterrupted, sg.name, err)
			}
			out.Status, out.Detail = verdict.Error, err.Error()
		}
		record(report.Stage{Name: sg.name, Status: out.Status, Seconds: time.Since(begin).Seconds(), Detail: out.Detail}, out.Warnings)
		if err != nil || out.Status == verdict.Rejected {
			return err
		}
		answered = answered || out.Done
	}
	return nil
}
