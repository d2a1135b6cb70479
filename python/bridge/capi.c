// Loading libpython at run time: see capi.h.
#include "capi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

p0_api py;

int p0_load(const char *path, const char *want_version, char *err, size_t errlen) {
	// RTLD_NOW: a missing symbol in libpython's own dependencies shows up here,
	// as a message, and not later as a crash in the middle of a call.
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(err, errlen, "loading %s: %s", path, e ? e : "dlopen failed");
		return -1;
	}
	p0_api api;
	memset(&api, 0, sizeof api);
	void *sym;
#define P0_RESOLVE(ret, name, params)                                                  \
	sym = dlsym(h, #name);                                                             \
	if (sym == NULL) {                                                                 \
		snprintf(err, errlen, "%s has no symbol %s (the bridge needs it)", path, #name); \
		/* no dlclose: see the version check below */                                     \
		return -1;                                                                     \
	}                                                                                  \
	memcpy(&api.name, &sym, sizeof sym);
	P0_FUNCTIONS(P0_RESOLVE)
#undef P0_RESOLVE
#define P0_RESOLVE_FLAG(name)                                                          \
	api.name = (int *)dlsym(h, #name);                                                 \
	if (api.name == NULL) {                                                            \
		snprintf(err, errlen, "%s has no symbol %s (the bridge needs it)", path, #name); \
		/* no dlclose: see the version check below */                                     \
		return -1;                                                                     \
	}
	P0_FLAGS(P0_RESOLVE_FLAG)
#undef P0_RESOLVE_FLAG
	api.None = (PyObject *)dlsym(h, "_Py_NoneStruct");
	if (api.None == NULL) {
		snprintf(err, errlen, "%s has no symbol _Py_NoneStruct (the bridge needs it)", path);
		// no dlclose: see the version check below
		return -1;
	}
	// The file found from sysconfig could belong to another build (a stale
	// copy, a multiarch folder shared by two installs): check before using it.
	const char *v = api.Py_GetVersion();
	if (v == NULL || strncmp(v, want_version, strlen(want_version)) != 0) {
		snprintf(err, errlen, "%s is Python %.40s, want %s*", path, v ? v : "?", want_version);
		// No dlclose: unloading a libpython that was mapped RTLD_GLOBAL runs
		// its destructors, which crashed intermittently (3.13); the handle of
		// a library that is refused is left for the failing process to drop.
		return -1;
	}
	py = api;
	return 0;
}
