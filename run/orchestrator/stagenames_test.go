package orchestrator

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestStageNamesAreTheirFunctions: a stage named x_y runs the function
// xYStage, so the name in a report or a progress line leads to its code.
func TestStageNamesAreTheirFunctions(t *testing.T) {
	for command, stages := range map[string][]stage{"run": runStages, "baseline": baselineStages, "reference": referenceStages, "inspect": inspectStages} {
		for _, sg := range stages {
			parts := strings.Split(sg.Name(), "_")
			for i := 1; i < len(parts); i++ {
				parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
			}
			want := "phase0/run/orchestrator." + strings.Join(parts, "") + "Stage"
			if got := runtime.FuncForPC(reflect.ValueOf(sg.Func()).Pointer()).Name(); got != want {
				t.Errorf("%s: stage %q runs %s, want %s", command, sg.Name(), got, want)
			}
		}
	}
}
