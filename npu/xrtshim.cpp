//go:build xrt

// xrtshim.cpp: the extern "C" layer over XRT's C++ API (see xrtshim.h).
// It follows the sequence mlir-air's XRT backend uses, so artifacts built
// by aircc run here exactly as they run there.

#include "xrtshim.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <xrt/experimental/xrt_elf.h>
#include <xrt/experimental/xrt_ext.h>
#include <xrt/experimental/xrt_system.h>
#include <xrt/experimental/xrt_version.h>
#include <xrt/experimental/xrt_xclbin.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_hw_context.h>
#include <xrt/xrt_kernel.h>

struct npu_kernel {
	xrt::device device;
	xrt::hw_context context;
	xrt::kernel kernel;
	bool elf = false;
	xrt::bo instr;            // xclbin only
	size_t instr_words = 0;   // xclbin only
};

struct npu_bo {
	xrt::bo bo;
	void *map = nullptr;
	size_t size = 0;
};

namespace {

void set_err(char *err, size_t errn, const std::string &msg)
{
	if (err && errn) {
		std::snprintf(err, errn, "%s", msg.c_str());
	}
}

// guard turns any exception into the error string: C callers (Go) cannot
// unwind C++ frames.
template <typename R, typename F>
R guard(char *err, size_t errn, R fail, F f)
{
	try {
		return f();
	} catch (const std::exception &e) {
		set_err(err, errn, e.what());
	} catch (...) {
		set_err(err, errn, "unknown C++ exception from XRT");
	}
	return fail;
}

} // namespace

extern "C" {

void npu_xrt_version(char *buf, size_t n)
{
	std::snprintf(buf, n, "%u.%u.%u", xrt::version::major(), xrt::version::minor(),
		      xrt::version::patch());
}

int npu_xrt_device_count(char *err, size_t errn)
{
	return guard(err, errn, -1, [] { return static_cast<int>(xrt::system::enumerate_devices()); });
}

int npu_xrt_device_info(unsigned idx, npu_xrt_device *out, char *err, size_t errn)
{
	return guard(err, errn, -1, [&] {
		xrt::device d(idx);
		std::snprintf(out->name, sizeof out->name, "%s",
			      d.get_info<xrt::info::device::name>().c_str());
		std::snprintf(out->bdf, sizeof out->bdf, "%s",
			      d.get_info<xrt::info::device::bdf>().c_str());
		return 0;
	});
}

npu_kernel *npu_xrt_load_xclbin(unsigned dev, const char *xclbin, const char *kernel,
				const void *instr, size_t instr_bytes, char *err, size_t errn)
{
	return guard(err, errn, static_cast<npu_kernel *>(nullptr), [&]() -> npu_kernel * {
		auto k = std::make_unique<npu_kernel>();
		k->device = xrt::device(dev);
		// std::string, not the string_view overload: that one parses data.
		xrt::xclbin xb(std::string{xclbin});
		k->device.register_xclbin(xb);
		k->context = xrt::hw_context(k->device, xb.get_uuid());
		std::string found;
		for (const auto &xk : xb.get_kernels()) {
			if (xk.get_name().find(kernel) != std::string::npos) {
				found = xk.get_name();
				break;
			}
		}
		if (found.empty()) {
			set_err(err, errn, std::string("no kernel named like \"") + kernel + "\" in " + xclbin);
			return nullptr;
		}
		k->kernel = xrt::kernel(k->context, found);
		k->instr = xrt::bo(k->device, instr_bytes, xrt::bo::flags::cacheable, k->kernel.group_id(1));
		k->instr.write(instr, instr_bytes, 0);
		k->instr_words = instr_bytes / 4;
		return k.release();
	});
}

npu_kernel *npu_xrt_load_elf(unsigned dev, const char *elf, const char *kernel, char *err,
			     size_t errn)
{
	return guard(err, errn, static_cast<npu_kernel *>(nullptr), [&]() -> npu_kernel * {
		auto k = std::make_unique<npu_kernel>();
		k->elf = true;
		k->device = xrt::device(dev);
		xrt::elf e(std::string{elf});
		k->context = xrt::hw_context(k->device, e);
		k->kernel = xrt::ext::kernel(k->context, kernel);
		return k.release();
	});
}

int npu_xrt_sync_instructions(npu_kernel *k, char *err, size_t errn)
{
	return guard(err, errn, -1, [&] {
		if (!k->elf) {
			k->instr.sync(XCL_BO_SYNC_BO_TO_DEVICE);
		}
		return 0;
	});
}

npu_bo *npu_xrt_bo_alloc(npu_kernel *k, unsigned arg, size_t size, char *err, size_t errn)
{
	return guard(err, errn, static_cast<npu_bo *>(nullptr), [&]() -> npu_bo * {
		auto b = std::make_unique<npu_bo>();
		if (k->elf) {
			b->bo = xrt::ext::bo(k->device, size);
		} else {
			b->bo = xrt::bo(k->device, size, xrt::bo::flags::host_only,
					k->kernel.group_id(static_cast<int>(arg) + 3));
		}
		b->map = b->bo.map();
		b->size = size;
		return b.release();
	});
}

void *npu_xrt_bo_map(npu_bo *b) { return b->map; }

size_t npu_xrt_bo_size(npu_bo *b) { return b->size; }

int npu_xrt_bo_sync(npu_bo *b, int to_device, char *err, size_t errn)
{
	return guard(err, errn, -1, [&] {
		b->bo.sync(to_device ? XCL_BO_SYNC_BO_TO_DEVICE : XCL_BO_SYNC_BO_FROM_DEVICE);
		return 0;
	});
}

int npu_xrt_run(npu_kernel *k, npu_bo *const *bos, size_t nbos, char *err, size_t errn)
{
	return guard(err, errn, -1, [&] {
		xrt::run run(k->kernel);
		int next = 0;
		if (!k->elf) {
			// The xclbin kernels aircc emits take (opcode 3 = run the
			// instruction stream, the instruction buffer, its length in
			// words) before the data arguments.
			unsigned int opcode = 3;
			run.set_arg(next++, opcode);
			run.set_arg(next++, k->instr);
			run.set_arg(next++, k->instr_words);
		}
		for (size_t i = 0; i < nbos; i++) {
			run.set_arg(next++, bos[i]->bo);
		}
		run.start();
		run.wait2(); // throws on any state but completed
		return 0;
	});
}

void npu_xrt_bo_free(npu_bo *b) { delete b; }

void npu_xrt_kernel_free(npu_kernel *k) { delete k; }

} // extern "C"
