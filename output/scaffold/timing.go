package scaffold

import (
	"fmt"
	"strings"
	"time"
)

// PhaseTimingName is the per-phase wall-clock log the deploy flow keeps in
// docs/development_progress/, beside progress.md.
const PhaseTimingName = "phase_timing.md"

// Phase0Timing is phase0's Phase 0 section of phase_timing.md for one run,
// in the deploy-new-llm skill's schema; upsertPhase0Entry puts it between
// the phase0 markers. Phase 0 compiles and runs nothing on the NPU, so those
// columns are 0 and the whole wall time is phase0's own.
func Phase0Timing(start, end time.Time, status string, events []string) string {
	wall := end.Sub(start).Minutes()
	var b strings.Builder
	fmt.Fprintf(&b, "### Phase 0 — Build CPU Reference  (%s, %s)\n\n", status, start.Format("2006-01-02"))
	fmt.Fprintf(&b, "- start_ts:           %d  (%s)\n", start.Unix(), start.Format("15:04:05 MST"))
	fmt.Fprintf(&b, "- end_ts:             %d  (%s)\n", end.Unix(), end.Format("15:04:05 MST"))
	fmt.Fprintf(&b, "- wall_min:           **%.1f**\n", wall)
	b.WriteString("- npu_compile_min:    0\n")
	b.WriteString("- npu_runtime_s:      0\n")
	fmt.Fprintf(&b, "- dev_min:            **%.1f**   (one phase0 run)\n", wall)
	b.WriteString("- notable_events:")
	if len(events) == 0 {
		b.WriteString("     none\n")
	} else {
		b.WriteString("\n")
		for _, e := range events {
			fmt.Fprintf(&b, "  - %s\n", strings.ReplaceAll(e, "\n", " "))
		}
	}
	return b.String()
}
