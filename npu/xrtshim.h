/* xrtshim.h: the C face of XRT's C++ API that package npu calls through cgo.
 * Every function mirrors one method of the Go Backend/Kernel/Buffer
 * interfaces (shim.go). Functions that can fail return 0 (or a non-NULL
 * handle) on success and write a NUL-terminated message into err (errn
 * bytes) on failure; no C++ exception crosses this boundary. */
#ifndef PHASE0_NPU_XRTSHIM_H
#define PHASE0_NPU_XRTSHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct npu_kernel npu_kernel;
typedef struct npu_bo npu_bo;

typedef struct {
	char name[256];
	char bdf[64];
} npu_xrt_device;

/* XRT library version, e.g. "2.25.0". */
void npu_xrt_version(char *buf, size_t n);

/* Number of devices XRT enumerates; -1 with err set on failure. */
int npu_xrt_device_count(char *err, size_t errn);
int npu_xrt_device_info(unsigned idx, npu_xrt_device *out, char *err, size_t errn);

/* Registers the xclbin, opens a hardware context, finds the first kernel
 * whose name contains kernel, and copies the instruction words into a
 * cacheable buffer in the kernel's group 1 (not yet synced). */
npu_kernel *npu_xrt_load_xclbin(unsigned dev, const char *xclbin, const char *kernel,
				const void *instr, size_t instr_bytes, char *err, size_t errn);
/* Loads an ELF (instructions inside), opens a context on it, finds kernel. */
npu_kernel *npu_xrt_load_elf(unsigned dev, const char *elf, const char *kernel, char *err,
			     size_t errn);
int npu_xrt_sync_instructions(npu_kernel *k, char *err, size_t errn);
/* A host-only buffer in the group of argument arg (xclbin: group_id(arg+3),
 * after opcode, instruction buffer and its length); ELF: an ext::bo. */
npu_bo *npu_xrt_bo_alloc(npu_kernel *k, unsigned arg, size_t size, char *err, size_t errn);
void *npu_xrt_bo_map(npu_bo *b);
size_t npu_xrt_bo_size(npu_bo *b);
int npu_xrt_bo_sync(npu_bo *b, int to_device, char *err, size_t errn);
/* Runs the kernel on bos in argument order and waits for completion. */
int npu_xrt_run(npu_kernel *k, npu_bo *const *bos, size_t nbos, char *err, size_t errn);
void npu_xrt_bo_free(npu_bo *b);
void npu_xrt_kernel_free(npu_kernel *k);

#ifdef __cplusplus
}
#endif
#endif
