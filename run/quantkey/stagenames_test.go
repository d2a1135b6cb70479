package quantkey

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestStageNamesAreTheirFunctions: a stage named x_y runs the function
// xYStage, the key's own here or a shared one of the bf16 run's, so the
// name in a report or a progress line leads to its code.
func TestStageNamesAreTheirFunctions(t *testing.T) {
	for _, sg := range quantStages {
		parts := strings.Split(sg.Name(), "_")
		for i := 1; i < len(parts); i++ {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
		fn := strings.Join(parts, "") + "Stage"
		got := runtime.FuncForPC(reflect.ValueOf(sg.Func()).Pointer()).Name()
		if got != "phase0/run/quantkey."+fn && got != "phase0/run/orchestrator."+fn {
			t.Errorf("stage %q runs %s, want %s of quantkey or orchestrator", sg.Name(), got, fn)
		}
	}
}
