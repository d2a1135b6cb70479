// Package npu finds AMD NPUs and runs compiled mlir-air kernels on them
// through XRT. Discovery works in every build: it reads the Linux accel
// subsystem and PCI sysfs directly. Running kernels needs the `xrt` build tag
// (cgo over XRT's C++ API through npu/xrtshim.{h,cpp}); without it the Runner
// says so instead of failing obscurely later.
package npu

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrNoDevice means no NPU is present or usable; the wrapping error says why.
var ErrNoDevice = errors.New("no NPU found")

// DriverName is the kernel driver of AMD's XDNA NPUs (in-tree since Linux 6.14).
const DriverName = "amdxdna"

// Device is one NPU as the probe (and, in xrt builds, XRT) sees it.
type Device struct {
	Name          string `json:"name"`
	BDF           string `json:"bdf"`              // PCI address, e.g. 0000:c5:00.1
	PCIID         string `json:"pci_id"`           // vendor:device and revision, e.g. 1022:17f0 rev 0x10
	Node          string `json:"node,omitempty"`   // /dev/accel/accelN
	Driver        string `json:"driver,omitempty"` // empty when no driver is bound
	DriverVersion string `json:"driver_version,omitempty"`
	Firmware      string `json:"firmware_version,omitempty"`
	Columns       int    `json:"columns,omitempty"` // AIE columns; only XRT reports them
	Source        string `json:"source"`            // "sysfs" or "xrt"
	// Problem says why the device cannot be used as it is (no driver bound,
	// no device node, node not openable), with what to do; empty when usable.
	Problem string `json:"problem,omitempty"`
}

// Usable reports whether a kernel could be run on the device.
func (d Device) Usable() bool { return d.Problem == "" }

// knownNPUs maps AMD PCI device ids to the generation names mlir-air uses
// (npu1 = Phoenix/Hawk Point, npu2 = Strix, Strix Halo, Krackan), so an NPU
// whose driver is not bound is still recognised.
var knownNPUs = map[string]string{
	"0x1502": "AMD NPU1 (Phoenix / Hawk Point)",
	"0x17f0": "AMD NPU2 (Strix / Strix Halo / Krackan)",
}

const amdVendor = "0x1022"

// ProbeOption adjusts where and how Devices looks.
type ProbeOption func(*probe)

// WithSysRoot reads sysfs from root instead of /sys (tests use a fake tree).
func WithSysRoot(root string) ProbeOption { return func(p *probe) { p.sys = root } }

// WithDevRoot looks for device nodes under root instead of /dev.
func WithDevRoot(root string) ProbeOption { return func(p *probe) { p.dev = root } }

// withOpen replaces the function that opens a device node to check access.
// Tests use it to deny access where running as root would ignore file modes.
func withOpen(open func(name string) (io.Closer, error)) ProbeOption {
	return func(p *probe) { p.open = open }
}

type probe struct {
	sys, dev string
	open     func(name string) (io.Closer, error)
}

func openRW(name string) (io.Closer, error) { return os.OpenFile(name, os.O_RDWR, 0) }

// Devices lists the NPUs on this machine, usable or not (see Device.Problem).
// With none it returns an error wrapping ErrNoDevice that says why. In xrt
// builds the XRT view (name, columns, firmware) is merged in by PCI address.
func Devices(opts ...ProbeOption) ([]Device, error) {
	p := probe{sys: "/sys", dev: "/dev", open: openRW}
	for _, o := range opts {
		o(&p)
	}
	devs, why := p.scan()
	devs = mergeXRT(devs)
	if len(devs) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoDevice, why)
	}
	return devs, nil
}

// scan finds NPUs from two sides: PCI functions with a known NPU id or the
// amdxdna driver (which catches an NPU whose driver is not loaded), and
// accel class devices driven by amdxdna. It returns, with no devices, the
// reason none were found.
func (p probe) scan() ([]Device, string) {
	byBDF := map[string]*Device{}
	pciDir := filepath.Join(p.sys, "bus", "pci", "devices")
	entries, pciErr := os.ReadDir(pciDir)
	for _, e := range entries {
		dir := filepath.Join(pciDir, e.Name())
		vendor, device := p.read(dir, "vendor"), p.read(dir, "device")
		driver := linkBase(filepath.Join(dir, "driver"))
		_, known := knownNPUs[device]
		if driver != DriverName && !(vendor == amdVendor && known) {
			continue
		}
		byBDF[e.Name()] = p.describe(e.Name(), dir)
	}

	accelDir := filepath.Join(p.sys, "class", "accel")
	accels, accelErr := os.ReadDir(accelDir)
	var others []string
	for _, e := range accels {
		dev := filepath.Join(accelDir, e.Name(), "device")
		driver := linkBase(filepath.Join(dev, "driver"))
		if driver != DriverName {
			others = append(others, fmt.Sprintf("%s (driver %q)", e.Name(), driver))
			continue
		}
		bdf := linkBase(dev)
		if bdf == "" {
			bdf = e.Name()
		}
		if _, seen := byBDF[bdf]; !seen {
			byBDF[bdf] = p.describe(bdf, dev)
		}
	}

	var out []Device
	for _, d := range byBDF {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b Device) int { return strings.Compare(a.BDF, b.BDF) })
	if len(out) > 0 {
		return out, ""
	}
	switch {
	case len(others) > 0:
		return nil, fmt.Sprintf("%s has %d accel device(s), none driven by %s: %s", accelDir, len(others), DriverName, strings.Join(others, ", "))
	case pciErr != nil && accelErr != nil:
		return nil, fmt.Sprintf("cannot read %s or %s (is sysfs mounted?)", pciDir, accelDir)
	default:
		return nil, fmt.Sprintf("no AMD NPU (PCI 1022:1502 or 1022:17f0) under %s and no %s device under %s", pciDir, DriverName, accelDir)
	}
}

// describe fills a Device from its PCI sysfs directory.
func (p probe) describe(bdf, dir string) *Device {
	vendor, device, rev := p.read(dir, "vendor"), p.read(dir, "device"), p.read(dir, "revision")
	d := &Device{
		BDF:    bdf,
		PCIID:  strings.TrimPrefix(vendor, "0x") + ":" + strings.TrimPrefix(device, "0x"),
		Driver: linkBase(filepath.Join(dir, "driver")),
		Source: "sysfs",
	}
	if rev != "" {
		d.PCIID += " rev " + rev
	}
	d.Name = knownNPUs[device]
	if d.Name == "" {
		d.Name = "AMD NPU (PCI " + d.PCIID + ")"
	}
	// The driver exposes these on some versions only; absent means unknown.
	d.Firmware = firstNonEmpty(p.read(dir, "fw_version"), p.read(dir, "firmware_version"))
	if d.Driver != "" {
		d.DriverVersion = p.read(filepath.Join(p.sys, "module", d.Driver), "version")
	}

	if d.Driver == "" {
		d.Problem = fmt.Sprintf("no driver is bound to %s: load %s (modprobe %s; in-tree since Linux 6.14, or AMD's xdna-driver)", bdf, DriverName, DriverName)
		return d
	}
	if d.Driver != DriverName {
		d.Problem = fmt.Sprintf("%s is bound to driver %q, not %s", bdf, d.Driver, DriverName)
		return d
	}
	nodes, _ := filepath.Glob(filepath.Join(dir, "accel", "accel*"))
	if len(nodes) == 0 {
		d.Problem = fmt.Sprintf("%s is bound to %s but has no accel device under %s (see dmesg for firmware load errors)", bdf, DriverName, filepath.Join(dir, "accel"))
		return d
	}
	slices.Sort(nodes)
	d.Node = filepath.Join(p.dev, "accel", filepath.Base(nodes[0]))
	f, err := p.open(d.Node)
	switch {
	case errors.Is(err, fs.ErrPermission):
		d.Problem = fmt.Sprintf("%s: permission denied: add the user to the group owning it (usually render) and log in again", d.Node)
	case errors.Is(err, fs.ErrNotExist):
		d.Problem = fmt.Sprintf("%s does not exist although sysfs lists it (is /dev populated, or is this a container without the device?)", d.Node)
	case err != nil:
		d.Problem = fmt.Sprintf("cannot open %s: %v", d.Node, err)
	default:
		_ = f.Close()
	}
	return d
}

// read returns a small sysfs attribute, trimmed; "" when absent or unreadable.
func (p probe) read(dir, name string) string {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 4096)) // sysfs attributes fit in a page
	return strings.TrimSpace(string(b))
}

func linkBase(path string) string {
	target, err := os.Readlink(path)
	if err != nil {
		return ""
	}
	return filepath.Base(target)
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// String is the one-line description used by texts and logs.
func (d Device) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s at %s", d.Name, d.BDF)
	if d.Node != "" {
		fmt.Fprintf(&b, " (%s)", d.Node)
	}
	if d.Driver != "" {
		fmt.Fprintf(&b, ", driver %s", d.Driver)
		if d.DriverVersion != "" {
			fmt.Fprintf(&b, " %s", d.DriverVersion)
		}
	}
	if d.Firmware != "" {
		fmt.Fprintf(&b, ", firmware %s", d.Firmware)
	}
	if d.Columns > 0 {
		fmt.Fprintf(&b, ", %s columns", strconv.Itoa(d.Columns))
	}
	return b.String()
}
