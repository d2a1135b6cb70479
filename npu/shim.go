package npu

// The Runner drives a device through these three interfaces. They mirror the
// C functions of npu/xrtshim.h one for one, so the Runner's logic (argument
// plan, buffer reuse, static inputs, locking) is the same code whether it
// runs on XRT or on the fake the tests use.

// Backend loads kernel artifacts onto device 0 (npu_xrt_load_xclbin/_elf).
type Backend interface {
	// Load registers the xclbin (or loads the ELF), opens a hardware context
	// and looks the kernel up. instr is the instruction stream (xclbin
	// artifacts only; nil for ELF), copied into the kernel's instruction
	// buffer but not yet synced to the device.
	Load(a Artifact, instr []byte) (Kernel, error)
}

// Kernel is a loaded kernel in its hardware context.
type Kernel interface {
	// SyncInstructions moves the instruction buffer to the device
	// (npu_xrt_sync_instructions); a no-op for ELF kernels.
	SyncInstructions() error
	// Alloc makes a host-only buffer object for argument arg, in the
	// memory group the kernel declares for it (npu_xrt_bo_alloc).
	Alloc(arg, size int) (Buffer, error)
	// Run starts the kernel on bufs, in argument order, and waits for it
	// (npu_xrt_run).
	Run(bufs []Buffer) error
	Close() error
}

// Buffer is a buffer object with a host mapping.
type Buffer interface {
	Map() []byte              // npu_xrt_bo_map
	Sync(toDevice bool) error // npu_xrt_bo_sync
	Close() error             // npu_xrt_bo_free
}
