//go:build xrt

package npu

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// Linked against the real libxrt (make check-xrt): the version is the
// library's, and on a machine without an NPU both XRT and sysfs say so.
func TestXRTLinked(t *testing.T) {
	v, err := XRTVersion()
	if err != nil || !strings.HasPrefix(v, "2.") {
		t.Fatalf("XRTVersion() = %q, %v; want 2.x", v, err)
	}
	t.Logf("libxrt %s", v)
	if _, err := os.Stat("/dev/accel"); err == nil {
		t.Skip("this machine has /dev/accel: the no-device path cannot be checked")
	}
	xs, err := xrtDevices()
	if err != nil || len(xs) != 0 {
		t.Fatalf("xrtDevices() = %v, %v; want none and no error", xs, err)
	}
	if _, err := Devices(); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Devices() err = %v, want ErrNoDevice", err)
	}
}
