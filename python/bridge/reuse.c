// The module _phase0_reuse: a NumPy data allocator (NEP 49) that keeps the
// large blocks NumPy frees and hands them back to the next array of the same
// size, for code that allocates the same large temporaries over and over
// (a folder's loader dequantizing layer after layer, upstream's code that
// phase0 cannot change).
//
// Each of those temporaries would otherwise be a fresh mmap from glibc whose
// pages the kernel zeroes on first touch and unmaps again on free: at Gemma 3
// 4B's quantized gate 1 that was ~70 GB of page zeroing, half the loader's
// time, and on a virtual machine that returns free memory to its host, a
// fault on memory the host must hand back first.
//
// The cache is bounded: at most cap bytes and P0_REUSE_SLOTS blocks, the
// least recently freed dropped first, and age() drops whatever was not freed
// again since the previous age() (a size the code stopped using). Outside
// begin()/end() every call passes straight to malloc/free, so arrays made
// while the cache was on can outlive it.
#include "bridge.h"

#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

// NumPy's PyDataMem_Handler, version 1 (numpy/ndarraytypes.h, NumPy >= 1.22):
// a stable layout, declared here because phase0 builds without NumPy headers.
typedef struct {
	void *ctx;
	void *(*malloc)(void *ctx, size_t size);
	void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
	void *(*realloc)(void *ctx, void *ptr, size_t new_size);
	void (*free)(void *ctx, void *ptr, size_t size);
} p0_data_allocator;

typedef struct {
	char name[127];
	uint8_t version;
	p0_data_allocator allocator;
} p0_data_handler;

// Blocks under this size are left to glibc, whose heap reuses them anyway
// (its mmap threshold adapts up to 32 MiB); it is also where NumPy starts
// asking for huge pages.
#define P0_REUSE_MIN ((size_t)4 << 20)
#define P0_REUSE_SLOTS 64

static struct {
	pthread_mutex_t mu;
	int on;
	size_t cap, held;
	unsigned long long clock; // orders the slots by when they were freed
	unsigned long long epoch; // age() calls since begin()
	struct {
		void *p;
		size_t n;
		unsigned long long freed_at, epoch;
	} slot[P0_REUSE_SLOTS];
	unsigned long long hits, misses, reused_bytes, fresh_bytes;
} cache = {.mu = PTHREAD_MUTEX_INITIALIZER};

// As NumPy's own allocator does for large blocks: transparent huge pages
// where the kernel grants them only on request (the "madvise" setting).
static void advise_huge(void *p, size_t n) {
	uintptr_t start = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
	if (n >= P0_REUSE_MIN && start - (uintptr_t)p < n) {
		madvise((void *)start, n - (start - (uintptr_t)p), MADV_HUGEPAGE);
	}
}

// A cached block of exactly n bytes (the most recently freed), or NULL.
static void *take(size_t n) {
	void *p = NULL;
	pthread_mutex_lock(&cache.mu);
	if (cache.on) {
		int best = -1;
		for (int i = 0; i < P0_REUSE_SLOTS; i++) {
			if (cache.slot[i].p != NULL && cache.slot[i].n == n && (best < 0 || cache.slot[i].freed_at > cache.slot[best].freed_at)) {
				best = i;
			}
		}
		if (best >= 0) {
			p = cache.slot[best].p;
			cache.slot[best].p = NULL;
			cache.held -= n;
			cache.hits++;
			cache.reused_bytes += n;
		} else {
			cache.misses++;
			cache.fresh_bytes += n;
		}
	}
	pthread_mutex_unlock(&cache.mu);
	return p;
}

static void *reuse_malloc(void *ctx, size_t n) {
	(void)ctx;
	void *p = n >= P0_REUSE_MIN ? take(n) : NULL;
	if (p != NULL) return p;
	p = malloc(n ? n : 1);
	if (p != NULL) advise_huge(p, n);
	return p;
}

static void *reuse_calloc(void *ctx, size_t nelem, size_t elsize) {
	(void)ctx;
	if (elsize != 0 && nelem > SIZE_MAX / elsize) return NULL;
	size_t n = nelem * elsize;
	void *p = n >= P0_REUSE_MIN ? take(n) : NULL;
	if (p != NULL) {
		memset(p, 0, n); // a reused block holds the last array's values
		return p;
	}
	p = calloc(n ? nelem : 1, n ? elsize : 1);
	if (p != NULL) advise_huge(p, n);
	return p;
}

static void *reuse_realloc(void *ctx, void *p, size_t n) {
	(void)ctx;
	return realloc(p, n ? n : 1); // every live block came from malloc
}

static void reuse_free(void *ctx, void *p, size_t n) {
	(void)ctx;
	void *drop[P0_REUSE_SLOTS + 1];
	int ndrop = 0;
	pthread_mutex_lock(&cache.mu);
	if (p != NULL && cache.on && n >= P0_REUSE_MIN && n <= cache.cap) {
		for (;;) {
			int empty = -1, oldest = -1;
			for (int i = 0; i < P0_REUSE_SLOTS; i++) {
				if (cache.slot[i].p == NULL) {
					if (empty < 0) empty = i;
				} else if (oldest < 0 || cache.slot[i].freed_at < cache.slot[oldest].freed_at) {
					oldest = i;
				}
			}
			if (empty >= 0 && cache.held + n <= cache.cap) {
				cache.slot[empty].p = p;
				cache.slot[empty].n = n;
				cache.slot[empty].freed_at = ++cache.clock;
				cache.slot[empty].epoch = cache.epoch;
				cache.held += n;
				p = NULL;
				break;
			}
			if (oldest < 0) break;
			drop[ndrop++] = cache.slot[oldest].p;
			cache.held -= cache.slot[oldest].n;
			cache.slot[oldest].p = NULL;
		}
	}
	pthread_mutex_unlock(&cache.mu);
	for (int i = 0; i < ndrop; i++) free(drop[i]);
	free(p);
}

static p0_data_handler handler = {
    "phase0_reuse", 1, {NULL, reuse_malloc, reuse_calloc, reuse_realloc, reuse_free}};

// Frees the cached blocks keep() refuses (it is asked with cache.mu held,
// the memory is released after it is let go); the bytes dropped.
static size_t drop_where(int (*keep)(int)) {
	void *drop[P0_REUSE_SLOTS];
	int ndrop = 0;
	size_t bytes = 0;
	pthread_mutex_lock(&cache.mu);
	for (int i = 0; i < P0_REUSE_SLOTS; i++) {
		if (cache.slot[i].p != NULL && !keep(i)) {
			drop[ndrop++] = cache.slot[i].p;
			bytes += cache.slot[i].n;
			cache.held -= cache.slot[i].n;
			cache.slot[i].p = NULL;
		}
	}
	pthread_mutex_unlock(&cache.mu);
	for (int i = 0; i < ndrop; i++) free(drop[i]);
	return bytes;
}

static int keep_none(int i) {
	(void)i;
	return 0;
}

static int freed_this_epoch(int i) { return cache.slot[i].epoch == cache.epoch; }

// begin(cap: int) -> None: the cache on, holding at most cap bytes.
static PyObject *reuse_begin(PyObject *self, PyObject *arg) {
	(void)self;
	size_t cap = py.PyLong_AsSize_t(arg);
	if (cap == (size_t)-1 && py.PyErr_Occurred() != NULL) return NULL;
	drop_where(keep_none);
	pthread_mutex_lock(&cache.mu);
	cache.on = 1;
	cache.cap = cap;
	cache.epoch = 0;
	cache.hits = cache.misses = cache.reused_bytes = cache.fresh_bytes = 0;
	pthread_mutex_unlock(&cache.mu);
	py.Py_IncRef(py.None);
	return py.None;
}

// age() -> int: drops the blocks not freed again since the previous age()
// (or begin()); the bytes dropped.
static PyObject *reuse_age(PyObject *self, PyObject *unused) {
	(void)self;
	(void)unused;
	size_t bytes = drop_where(freed_this_epoch);
	pthread_mutex_lock(&cache.mu);
	cache.epoch++;
	pthread_mutex_unlock(&cache.mu);
	return py.PyLong_FromSize_t(bytes);
}

// end() -> (hits, misses, reused bytes, fresh bytes): the cache off and
// emptied; what it did since begin().
static PyObject *reuse_end(PyObject *self, PyObject *unused) {
	(void)self;
	(void)unused;
	pthread_mutex_lock(&cache.mu);
	cache.on = 0;
	unsigned long long hits = cache.hits, misses = cache.misses, reused = cache.reused_bytes, fresh = cache.fresh_bytes;
	pthread_mutex_unlock(&cache.mu);
	drop_where(keep_none);
	return py.Py_BuildValue("(KKKK)", hits, misses, reused, fresh);
}

// held() -> int: the bytes the cache holds now.
static PyObject *reuse_held(PyObject *self, PyObject *unused) {
	(void)self;
	(void)unused;
	pthread_mutex_lock(&cache.mu);
	size_t held = cache.held;
	pthread_mutex_unlock(&cache.mu);
	return py.PyLong_FromSize_t(held);
}

static p0_method methods[] = {
    {"begin", (void *)reuse_begin, P0_METH_O, "begin(cap): keep freed blocks of 4 MiB or more, up to cap bytes"},
    {"age", (void *)reuse_age, P0_METH_NOARGS, "age(): drop what was not freed again since the last age(); bytes dropped"},
    {"end", (void *)reuse_end, P0_METH_NOARGS, "end(): stop and empty the cache; (hits, misses, reused bytes, fresh bytes)"},
    {"held", (void *)reuse_held, P0_METH_NOARGS, "held(): the bytes the cache holds now"},
};

// Called with the GIL held: sys.modules["_phase0_reuse"], with the handler
// (a "mem_handler" capsule, what numpy's PyDataMem_SetHandler takes) and the
// functions above.
int p0_expose_reuse(char *err, size_t errlen) {
	PyObject *modules = py.PySys_GetObject("modules"); // borrowed
	PyObject *mod = py.PyModule_New("_phase0_reuse");
	PyObject *capsule = py.PyCapsule_New(&handler, "mem_handler", NULL);
	int rc = mod != NULL && capsule != NULL && modules != NULL ? py.PyObject_SetAttrString(mod, "handler", capsule) : -1;
	for (size_t i = 0; rc == 0 && i < sizeof methods / sizeof methods[0]; i++) {
		PyObject *fn = py.PyCFunction_NewEx(&methods[i], NULL, NULL);
		rc = fn != NULL ? py.PyObject_SetAttrString(mod, methods[i].ml_name, fn) : -1;
		py.Py_DecRef(fn);
	}
	if (rc == 0) rc = py.PyDict_SetItemString(modules, "_phase0_reuse", mod);
	py.Py_DecRef(capsule);
	py.Py_DecRef(mod);
	if (rc != 0) {
		py.PyErr_Clear();
		snprintf(err, errlen, "cannot create the module _phase0_reuse");
		return -1;
	}
	return 0;
}
