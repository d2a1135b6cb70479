package fingerprint

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
)

// CPU is what of the processor picks the kernels torch (ATen's CPU
// capability, oneDNN's ISA, MKL's and OpenBLAS's code paths) and NumPy run:
// the vendor and the instruction-set flags among KernelFlags. bf16 matmuls
// round differently on AVX2, AVX-512 BF16 and AMX, so a verdict recorded on
// one host is not reused on a host whose flags differ (a home or cache
// shared between machines).
type CPU struct {
	Vendor string   `json:"vendor"`
	Flags  []string `json:"flags"`
	// CPUs is how many CPUs this process may run on (its affinity), which
	// the worker inherits: torch's and OpenMP's default thread count, which
	// splits every reduction and so can move a bf16 result's last bits.
	CPUs int `json:"cpus"`
}

// KernelFlags are the /proc/cpuinfo flags (x86 "flags", Arm "Features")
// that the CPU dispatch of ATen (avx2; avx512f+bw+vl+dq), oneDNN
// (avx512_core_vnni/_bf16/_fp16, avx_vnni, amx), MKL, OpenBLAS and NumPy
// (its baseline and dispatched targets) test.
var KernelFlags = []string{
	"sse3", "ssse3", "sse4_1", "sse4_2", "popcnt", "avx", "avx2", "fma", "f16c", "bmi1", "bmi2",
	"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx512ifma", "avx512vbmi", "avx512vbmi2",
	"avx512_vnni", "avx512_bf16", "avx512_fp16", "avx512_bitalg", "avx512_vpopcntdq",
	"avx_vnni", "avx_vnni_int8", "avx_ne_convert", "avx_ifma",
	"amx_tile", "amx_bf16", "amx_int8", "amx_fp16", "amx_complex",
	// Arm
	"asimd", "asimdhp", "asimddp", "fphp", "bf16", "i8mm", "sve", "sve2", "svebf16", "svei8mm", "sme", "sme2",
}

// cpuinfoPath is read by ReadCPU.
const cpuinfoPath = "/proc/cpuinfo"

// ReadCPU stamps this machine's processor. Without /proc/cpuinfo the stamp
// is empty (and equal between runs on such a system).
func ReadCPU() CPU {
	c := CPU{Flags: []string{}}
	if data, err := os.ReadFile(cpuinfoPath); err == nil {
		c = ParseCPU(string(data))
	}
	c.CPUs = runtime.NumCPU()
	return c
}

// ParseCPU reads the first processor of a /proc/cpuinfo text.
func ParseCPU(cpuinfo string) CPU {
	c := CPU{Flags: []string{}}
	var flagsSeen bool
	for line := range strings.Lines(cpuinfo) {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch key {
		case "vendor_id", "CPU implementer":
			if c.Vendor == "" {
				c.Vendor = value
			}
		case "flags", "Features":
			if flagsSeen {
				continue
			}
			flagsSeen = true
			for _, f := range strings.Fields(value) {
				if slices.Contains(KernelFlags, f) {
					c.Flags = append(c.Flags, f)
				}
			}
		}
	}
	slices.Sort(c.Flags)
	c.Flags = slices.Compact(c.Flags)
	return c
}

// cpuChange names how two CPU stamps differ ("" when they do not).
func cpuChange(old, cur CPU) string {
	if old.Vendor != cur.Vendor {
		return "the CPU vendor changed (" + old.Vendor + " → " + cur.Vendor + "): torch's kernels may round differently"
	}
	if old.CPUs != cur.CPUs {
		return fmt.Sprintf("this process may run on %d CPUs, %d when the verdict was recorded: torch's default thread count, which splits reductions", cur.CPUs, old.CPUs)
	}
	for _, f := range cur.Flags {
		if !slices.Contains(old.Flags, f) {
			return "the CPU now has " + f + " (it did not when the verdict was recorded): torch picks other kernels"
		}
	}
	for _, f := range old.Flags {
		if !slices.Contains(cur.Flags, f) {
			return "the CPU lacks " + f + " (it had it when the verdict was recorded): torch picks other kernels"
		}
	}
	return ""
}
