//go:build !xrt

package npu

// xrtBuilt tells tests which build they are in.
const xrtBuilt = false

func newXRTBackend() (Backend, error) { return nil, ErrNoXRT }

// mergeXRT has nothing to add without XRT: the sysfs view is all there is.
func mergeXRT(devs []Device) []Device { return devs }

// XRTVersion reports the XRT library version; ErrNoXRT in this build.
func XRTVersion() (string, error) { return "", ErrNoXRT }
