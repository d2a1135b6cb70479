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
// begin()/end() every call passes straight to malloc/free (but for a piece
// carved from the arena, below), so arrays made while the cache was on can
// outlive it.
//
// With arena(cap), the blocks the cache lets go of (a size the code stopped
// making, or one pushed out by the bound) are not freed but kept, up to cap
// bytes not carved yet and never so many that the process would pass the
// resident peak it has reached, and the arrays the cache has no block for
// are carved out of them: memory the process has touched already instead
// of a fresh mapping. At gate 1 that is the projections kept for gate 2,
// carved out of what the loader's head freed. A carved piece is a live
// array; its block is freed when the arena is closed (end()) and its last
// piece goes.
#include "bridge.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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
// asking for huge pages. smallest() lowers it (never under a page) so that
// tests on small fixtures take the same paths as a real model's arrays.
#define P0_REUSE_MIN ((size_t)4 << 20)
#define P0_REUSE_SLOTS 64
// Arena blocks, and the bytes before each carved piece: its size, which
// realloc needs (NumPy's realloc is not told the old size). 64 also keeps
// every piece 64-byte aligned in a block malloc aligned to 16.
#define P0_ARENA_BLOCKS 64
#define P0_PIECE_HEAD ((size_t)64)
#define P0_PAGE ((uintptr_t)4096)

static struct {
	pthread_mutex_t mu;
	int on;
	size_t cap, held;
	size_t smallest; // blocks of this size or more are cached and carved (0: P0_REUSE_MIN)
	unsigned long long clock; // orders the slots by when they were freed
	unsigned long long epoch; // age() calls since begin()
	struct {
		void *p;
		size_t n;
		unsigned long long freed_at, epoch;
	} slot[P0_REUSE_SLOTS];
	unsigned long long hits, misses, reused_bytes, fresh_bytes, carved_bytes;
	// The arena: blocks kept for carving. Only open blocks (kept since the
	// last begin(), until end()) are carved from, and their uncarved bytes
	// are kept under arena_cap; a closed block stays here until its last
	// piece is freed.
	size_t arena_cap;
	struct {
		char *base;
		size_t size, used, live;
		int open;
	} block[P0_ARENA_BLOCKS];
} cache = {.mu = PTHREAD_MUTEX_INITIALIZER};

// The smallest block cached or carved: P0_REUSE_MIN unless smallest() set
// another (read without cache.mu by malloc, hence atomic).
static size_t smallest_block(void) {
	size_t n = __atomic_load_n(&cache.smallest, __ATOMIC_RELAXED);
	return n ? n : P0_REUSE_MIN;
}

// Gives the whole pages within [p, p + n) back to the kernel.
static void discard(char *p, size_t n) {
	uintptr_t start = ((uintptr_t)p + P0_PAGE - 1) & ~(P0_PAGE - 1);
	uintptr_t end = ((uintptr_t)p + n) & ~(P0_PAGE - 1);
	if (end > start) madvise((void *)start, end - start, MADV_DONTNEED);
}

static size_t piece_span(size_t n) { return P0_PIECE_HEAD + ((n + 63) & ~(size_t)63); }

// The arena block p was carved from, or -1 (cache.mu held).
static int block_of(const void *p) {
	for (int i = 0; i < P0_ARENA_BLOCKS; i++) {
		char *base = cache.block[i].base;
		if (base != NULL && (const char *)p >= base + P0_PIECE_HEAD && (const char *)p < base + cache.block[i].used) return i;
	}
	return -1;
}

// A piece of n bytes carved from an open block (the one it fits tightest),
// or NULL (cache.mu held).
static void *carve(size_t n) {
	size_t span = piece_span(n);
	int best = -1;
	for (int i = 0; i < P0_ARENA_BLOCKS; i++) {
		if (cache.block[i].base == NULL || !cache.block[i].open || cache.block[i].size - cache.block[i].used < span) continue;
		if (best < 0 || cache.block[i].size - cache.block[i].used < cache.block[best].size - cache.block[best].used) best = i;
	}
	if (best < 0) return NULL;
	char *head = cache.block[best].base + cache.block[best].used;
	memcpy(head, &n, sizeof n);
	cache.block[best].used += span;
	cache.block[best].live++;
	cache.carved_bytes += n;
	return head + P0_PIECE_HEAD;
}

static size_t piece_size(const void *p) {
	size_t n;
	memcpy(&n, (const char *)p - P0_PIECE_HEAD, sizeof n);
	return n;
}

// Releases piece p of block b: in an open block, the end moves back over it
// if it was the last carved (to be carved again); otherwise its pages go
// back to the kernel. Returns the block's memory for the caller to free once
// the block is closed and empty (cache.mu held).
static void *release_piece(int b, void *p) {
	char *head = (char *)p - P0_PIECE_HEAD;
	size_t span = piece_span(piece_size(p));
	if (cache.block[b].open && head + span == cache.block[b].base + cache.block[b].used) {
		cache.block[b].used = (size_t)(head - cache.block[b].base);
	} else {
		discard(head, span);
	}
	if (--cache.block[b].live > 0) return NULL;
	if (cache.block[b].open) {
		cache.block[b].used = 0; // empty: carved again from the start
		return NULL;
	}
	void *base = cache.block[b].base;
	cache.block[b].base = NULL;
	return base;
}

// The process's resident peak so far less its resident size now (VmHWM and
// VmRSS), in bytes; 0 if /proc cannot tell.
static size_t below_peak(void) {
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0) return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0) return 0;
	buf[n] = 0;
	const char *hwm = strstr(buf, "\nVmHWM:"), *rss = strstr(buf, "\nVmRSS:");
	if (hwm == NULL || rss == NULL) return 0;
	unsigned long long hwm_kb = strtoull(hwm + 7, NULL, 10), rss_kb = strtoull(rss + 7, NULL, 10);
	return hwm_kb > rss_kb ? (size_t)(hwm_kb - rss_kb) << 10 : 0;
}

// How many more uncarved bytes the arena may hold: arena_cap less what its
// open blocks have not carved yet, and never more than keeps the process
// under the resident peak it has reached already (cache.mu held).
static size_t arena_room(void) {
	size_t free = 0;
	for (int i = 0; i < P0_ARENA_BLOCKS; i++) {
		if (cache.block[i].base != NULL && cache.block[i].open) free += cache.block[i].size - cache.block[i].used;
	}
	size_t room = free < cache.arena_cap ? cache.arena_cap - free : 0;
	if (room == 0) return 0;
	size_t peak = below_peak();
	return room < peak ? room : peak;
}

// What becomes of a block of n bytes the cache lets go of: a piece is
// released, a block kept in the arena while there is room; whatever is
// returned the caller frees once cache.mu is let go (NULL: nothing).
static void *let_go(void *p, size_t n) {
	if (p == NULL) return NULL;
	int b = block_of(p);
	if (b >= 0) return release_piece(b, p);
	size_t room = arena_room();
	if (n < smallest_block() || room < smallest_block()) return p;
	for (int i = 0; i < P0_ARENA_BLOCKS; i++) {
		if (cache.block[i].base == NULL) {
			size_t size = n <= room ? n : room & ~(size_t)(P0_PAGE - 1);
			discard((char *)p + size, n - size); // beyond the room: not held
			cache.block[i].base = p;
			cache.block[i].size = size;
			cache.block[i].used = 0;
			cache.block[i].live = 0;
			cache.block[i].open = 1;
			return NULL;
		}
	}
	return p;
}

// Closes the arena: nothing more is carved or kept; the uncarved end of each
// block goes back to the kernel, and a block with no piece left is freed.
// Returns how many blocks were put in out, for the caller to free once
// cache.mu is let go (cache.mu held).
static int close_arena(void *out[P0_ARENA_BLOCKS]) {
	int n = 0;
	for (int i = 0; i < P0_ARENA_BLOCKS; i++) {
		if (cache.block[i].base == NULL || !cache.block[i].open) continue;
		cache.block[i].open = 0;
		if (cache.block[i].live == 0) {
			out[n++] = cache.block[i].base;
			cache.block[i].base = NULL;
		} else {
			discard(cache.block[i].base + cache.block[i].used, cache.block[i].size - cache.block[i].used);
		}
	}
	cache.arena_cap = 0;
	return n;
}

// As NumPy's own allocator does for large blocks: transparent huge pages
// where the kernel grants them only on request (the "madvise" setting).
static void advise_huge(void *p, size_t n) {
	uintptr_t start = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
	if (n >= P0_REUSE_MIN && start - (uintptr_t)p < n) {
		madvise((void *)start, n - (start - (uintptr_t)p), MADV_HUGEPAGE);
	}
}

// A block for n bytes: a cached block of exactly n bytes (the most recently
// freed), else a piece carved from the arena, else NULL.
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
			p = carve(n);
			if (p == NULL) cache.fresh_bytes += n;
		}
	}
	pthread_mutex_unlock(&cache.mu);
	return p;
}

static void *reuse_malloc(void *ctx, size_t n) {
	(void)ctx;
	void *p = n >= smallest_block() ? take(n) : NULL;
	if (p != NULL) return p;
	p = malloc(n ? n : 1);
	if (p != NULL) advise_huge(p, n);
	return p;
}

static void *reuse_calloc(void *ctx, size_t nelem, size_t elsize) {
	(void)ctx;
	if (elsize != 0 && nelem > SIZE_MAX / elsize) return NULL;
	size_t n = nelem * elsize;
	void *p = n >= smallest_block() ? take(n) : NULL;
	if (p != NULL) {
		memset(p, 0, n); // a reused block or a piece holds earlier values
		return p;
	}
	p = calloc(n ? nelem : 1, n ? elsize : 1);
	if (p != NULL) advise_huge(p, n);
	return p;
}

// A piece is moved out to a block of its own (its neighbours fix where it
// ends); any other block is glibc's to resize.
static void *reuse_realloc(void *ctx, void *p, size_t n) {
	(void)ctx;
	pthread_mutex_lock(&cache.mu);
	int b = p != NULL ? block_of(p) : -1;
	size_t old = b >= 0 ? piece_size(p) : 0;
	pthread_mutex_unlock(&cache.mu);
	if (b < 0) return realloc(p, n ? n : 1);
	void *q = malloc(n ? n : 1);
	if (q == NULL) return NULL; // p stays valid, as realloc leaves it
	memcpy(q, p, old < n ? old : n);
	pthread_mutex_lock(&cache.mu);
	void *drop = release_piece(block_of(p), p);
	pthread_mutex_unlock(&cache.mu);
	free(drop);
	return q;
}

static void reuse_free(void *ctx, void *p, size_t n) {
	(void)ctx;
	void *drop[P0_REUSE_SLOTS + 1];
	int ndrop = 0;
	pthread_mutex_lock(&cache.mu);
	if (p != NULL && cache.on && n >= smallest_block() && n <= cache.cap) {
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
			drop[ndrop] = let_go(cache.slot[oldest].p, cache.slot[oldest].n);
			ndrop += drop[ndrop] != NULL;
			cache.held -= cache.slot[oldest].n;
			cache.slot[oldest].p = NULL;
		}
	}
	p = let_go(p, n);
	pthread_mutex_unlock(&cache.mu);
	for (int i = 0; i < ndrop; i++) free(drop[i]);
	free(p);
}

static p0_data_handler handler = {
    "phase0_reuse", 1, {NULL, reuse_malloc, reuse_calloc, reuse_realloc, reuse_free}};

// Lets go of the cached blocks keep() refuses (it is asked with cache.mu
// held; what let_go returns is freed after the lock is let go); the bytes.
static size_t drop_where(int (*keep)(int)) {
	void *drop[P0_REUSE_SLOTS];
	int ndrop = 0;
	size_t bytes = 0;
	pthread_mutex_lock(&cache.mu);
	for (int i = 0; i < P0_REUSE_SLOTS; i++) {
		if (cache.slot[i].p != NULL && !keep(i)) {
			drop[ndrop] = let_go(cache.slot[i].p, cache.slot[i].n);
			ndrop += drop[ndrop] != NULL;
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

// Stops the cache and closes the arena, emptying both.
static void stop_all(void) {
	void *drop[P0_ARENA_BLOCKS];
	pthread_mutex_lock(&cache.mu);
	cache.on = 0;
	int ndrop = close_arena(drop);
	pthread_mutex_unlock(&cache.mu);
	for (int i = 0; i < ndrop; i++) free(drop[i]);
	drop_where(keep_none); // a cached piece released frees its block once it was the last
}

// begin(cap: int) -> None: the cache on, holding at most cap bytes; no arena.
static PyObject *reuse_begin(PyObject *self, PyObject *arg) {
	(void)self;
	size_t cap = py.PyLong_AsSize_t(arg);
	if (cap == (size_t)-1 && py.PyErr_Occurred() != NULL) return NULL;
	stop_all();
	pthread_mutex_lock(&cache.mu);
	cache.on = 1;
	cache.cap = cap;
	cache.epoch = 0;
	cache.hits = cache.misses = cache.reused_bytes = cache.fresh_bytes = cache.carved_bytes = 0;
	pthread_mutex_unlock(&cache.mu);
	py.Py_IncRef(py.None);
	return py.None;
}

// arena(cap: int) -> None: until end(), keep of the blocks the cache lets
// go of up to cap bytes not carved yet (the part of a block beyond that is
// given back), and carve from them what the cache has no block for. Called
// again as the work goes on, with what it still needs.
static PyObject *reuse_arena(PyObject *self, PyObject *arg) {
	(void)self;
	size_t cap = py.PyLong_AsSize_t(arg);
	if (cap == (size_t)-1 && py.PyErr_Occurred() != NULL) return NULL;
	pthread_mutex_lock(&cache.mu);
	if (cache.on) cache.arena_cap = cap;
	pthread_mutex_unlock(&cache.mu);
	py.Py_IncRef(py.None);
	return py.None;
}

// smallest(n: int) -> int: from now on (across begin() and end()), blocks of
// n bytes or more (never under a page) are cached and carved; the previous
// value. The default is P0_REUSE_MIN.
static PyObject *reuse_smallest(PyObject *self, PyObject *arg) {
	(void)self;
	size_t n = py.PyLong_AsSize_t(arg);
	if (n == (size_t)-1 && py.PyErr_Occurred() != NULL) return NULL;
	if (n < P0_PAGE) n = P0_PAGE;
	size_t previous = smallest_block();
	__atomic_store_n(&cache.smallest, n, __ATOMIC_RELAXED);
	return py.PyLong_FromSize_t(previous);
}

// age() -> int: lets go of the blocks not freed again since the previous
// age() (or begin()); the bytes.
static PyObject *reuse_age(PyObject *self, PyObject *unused) {
	(void)self;
	(void)unused;
	size_t bytes = drop_where(freed_this_epoch);
	pthread_mutex_lock(&cache.mu);
	cache.epoch++;
	pthread_mutex_unlock(&cache.mu);
	return py.PyLong_FromSize_t(bytes);
}

// end() -> (hits, misses, reused bytes, fresh bytes, carved bytes): the
// cache off and emptied, the arena closed; what they did since begin().
static PyObject *reuse_end(PyObject *self, PyObject *unused) {
	(void)self;
	(void)unused;
	pthread_mutex_lock(&cache.mu);
	unsigned long long hits = cache.hits, misses = cache.misses, reused = cache.reused_bytes, fresh = cache.fresh_bytes,
			   carved = cache.carved_bytes;
	pthread_mutex_unlock(&cache.mu);
	stop_all();
	return py.Py_BuildValue("(KKKKK)", hits, misses, reused, fresh, carved);
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

// arena_state() -> (blocks, room, bytes carved, live pieces):
// the arena now, closed blocks with pieces still live included.
static PyObject *reuse_arena_state(PyObject *self, PyObject *unused) {
	(void)self;
	(void)unused;
	unsigned long long blocks = 0, used = 0, live = 0;
	pthread_mutex_lock(&cache.mu);
	for (int i = 0; i < P0_ARENA_BLOCKS; i++) {
		if (cache.block[i].base == NULL) continue;
		blocks++;
		used += cache.block[i].used;
		live += cache.block[i].live;
	}
	unsigned long long room = arena_room();
	pthread_mutex_unlock(&cache.mu);
	return py.Py_BuildValue("(KKKK)", blocks, room, used, live);
}

static p0_method methods[] = {
    {"begin", (void *)reuse_begin, P0_METH_O, "begin(cap): keep freed blocks of 4 MiB or more, up to cap bytes"},
    {"arena", (void *)reuse_arena, P0_METH_O, "arena(cap): keep what the cache lets go of, up to cap bytes, to carve arrays from"},
    {"smallest", (void *)reuse_smallest, P0_METH_O, "smallest(n): cache and carve blocks of n bytes or more (default 4 MiB); the previous value"},
    {"age", (void *)reuse_age, P0_METH_NOARGS, "age(): let go of what was not freed again since the last age(); bytes"},
    {"end", (void *)reuse_end, P0_METH_NOARGS, "end(): stop, empty the cache, close the arena; (hits, misses, reused, fresh, carved bytes)"},
    {"held", (void *)reuse_held, P0_METH_NOARGS, "held(): the bytes the cache holds now"},
    {"arena_state", (void *)reuse_arena_state, P0_METH_NOARGS, "arena_state(): (blocks, room left under the cap, bytes carved, live pieces)"},
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
