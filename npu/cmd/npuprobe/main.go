// npuprobe prints the NPUs this machine has, and the XRT version when built
// with -tags xrt. `make check-xrt` runs it inside the sid chroot, where it
// must report "no device" cleanly on a machine without an NPU.
//
// Exit status: 0 when the probe ran (devices found or not), 2 when it could
// not tell.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	"phase0/npu"
)

func main() {
	asJSON := flag.Bool("json", false, "print JSON")
	flag.Parse()

	xrtVersion, xrtErr := npu.XRTVersion()
	devs, err := npu.Devices()
	if err != nil && !errors.Is(err, npu.ErrNoDevice) {
		fmt.Fprintln(os.Stderr, "npuprobe:", err)
		os.Exit(2)
	}
	if *asJSON {
		out := struct {
			XRT     string       `json:"xrt_version,omitempty"`
			Devices []npu.Device `json:"devices"`
			None    string       `json:"none_found,omitempty"`
		}{XRT: xrtVersion, Devices: devs}
		if out.Devices == nil {
			out.Devices = []npu.Device{}
		}
		if err != nil {
			out.None = err.Error()
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(out)
		return
	}
	if xrtErr != nil {
		fmt.Println("xrt: not linked:", xrtErr)
	} else {
		fmt.Println("xrt: libxrt", xrtVersion)
	}
	if err != nil {
		fmt.Println("npu: no device:", err)
		return
	}
	for _, d := range devs {
		fmt.Println("npu:", d)
		if !d.Usable() {
			fmt.Println("     not usable:", d.Problem)
		}
	}
}
