// C half of package bridge. Every function that touches Python objects runs
// with the GIL held on the OS thread that initialized the interpreter; the Go
// side guarantees that by serving all calls from one locked goroutine.
#include "bridge.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

// The interpreter's main thread state while the GIL is released between calls.
static PyThreadState *p0_saved;

int p0_linked_major(void) { return PY_MAJOR_VERSION; }
int p0_linked_minor(void) { return PY_MINOR_VERSION; }

static void status_message(PyStatus st, char *err, size_t errlen) {
	if (PyStatus_IsExit(st)) {
		snprintf(err, errlen, "python asked to exit with status %d during initialization", st.exitcode);
		return;
	}
	snprintf(err, errlen, "%s%s%s", st.func ? st.func : "", st.func ? ": " : "",
	         st.err_msg ? st.err_msg : "unknown initialization error");
}

int p0_init(const char *exe, char *err, size_t errlen) {
	PyPreConfig pre;
	PyConfig cfg;
	PyStatus st;

	// UTF-8 mode: the isolated configuration leaves the C locale alone, which
	// would make file names and stdio ASCII-only.
	PyPreConfig_InitIsolatedConfig(&pre);
	pre.utf8_mode = 1;
	st = Py_PreInitialize(&pre);
	if (PyStatus_Exception(st)) {
		status_message(st, err, errlen);
		return -1;
	}

	// Isolated: PYTHON* variables, user site-packages and the current directory
	// cannot change what gets imported; the venv is found from `executable`.
	PyConfig_InitIsolatedConfig(&cfg);
	cfg.install_signal_handlers = 0; // the Go runtime owns signals
	cfg.parse_argv = 0;
	cfg.buffered_stdio = 0;  // progress output reaches the parent live and survives crashes
	cfg.write_bytecode = 0;  // never litter __pycache__ next to the shim

	st = PyConfig_SetBytesString(&cfg, &cfg.program_name, exe);
	if (PyStatus_Exception(st)) goto fail;
	st = PyConfig_SetBytesString(&cfg, &cfg.executable, exe);
	if (PyStatus_Exception(st)) goto fail;
	st = Py_InitializeFromConfig(&cfg);
	if (PyStatus_Exception(st)) goto fail;
	PyConfig_Clear(&cfg);
	p0_saved = PyEval_SaveThread();
	return 0;

fail:
	status_message(st, err, errlen);
	PyConfig_Clear(&cfg);
	return -1;
}

void p0_enter(void) { PyEval_RestoreThread(p0_saved); }
void p0_leave(void) { p0_saved = PyEval_SaveThread(); }

// Called with the GIL held.
int p0_prepend_sys_path(const char *dir, char *err, size_t errlen) {
	PyObject *path = PySys_GetObject("path"); // borrowed
	if (path == NULL || !PyList_Check(path)) {
		snprintf(err, errlen, "sys.path is missing or not a list");
		return -1;
	}
	PyObject *item = PyUnicode_DecodeFSDefault(dir);
	if (item == NULL) {
		PyErr_Clear();
		snprintf(err, errlen, "cannot decode path %s", dir);
		return -1;
	}
	int rc = PyList_Insert(path, 0, item);
	Py_DECREF(item);
	if (rc != 0) {
		PyErr_Clear();
		snprintf(err, errlen, "cannot insert %s into sys.path", dir);
		return -1;
	}
	return 0;
}

// Called with the GIL held. Copies str(sys.<name>) into out.
int p0_sys_str(const char *name, char *out, size_t outlen) {
	PyObject *v = PySys_GetObject(name); // borrowed
	if (v == NULL || !PyUnicode_Check(v)) return -1;
	Py_ssize_t n = 0;
	const char *s = PyUnicode_AsUTF8AndSize(v, &n);
	if (s == NULL) {
		PyErr_Clear();
		return -1;
	}
	snprintf(out, outlen, "%s", s);
	return 0;
}

static void set_bridge_err(p0_result *r, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->bridge_err, sizeof r->bridge_err, fmt, ap);
	va_end(ap);
	r->failed = 1;
	r->is_py_error = 0;
}

// "ValueError" for builtins, "package.module.Error" otherwise.
static PyObject *type_name(PyObject *type) {
	PyObject *qual = PyObject_GetAttrString(type, "__qualname__");
	PyObject *mod = PyObject_GetAttrString(type, "__module__");
	PyObject *name = NULL;
	if (qual != NULL && PyUnicode_Check(qual)) {
		if (mod != NULL && PyUnicode_Check(mod) && PyUnicode_CompareWithASCIIString(mod, "builtins") != 0) {
			name = PyUnicode_FromFormat("%U.%U", mod, qual);
		} else {
			name = Py_NewRef(qual);
		}
	}
	Py_XDECREF(qual);
	Py_XDECREF(mod);
	if (name == NULL) {
		PyErr_Clear();
		name = PyUnicode_FromString(((PyTypeObject *)type)->tp_name);
	}
	return name;
}

static PyObject *format_traceback(PyObject *type, PyObject *value, PyObject *tb) {
	PyObject *mod = PyImport_ImportModule("traceback");
	if (mod == NULL) return NULL;
	PyObject *lines = PyObject_CallMethod(mod, "format_exception", "OOO", type,
	                                      value ? value : Py_None, tb ? tb : Py_None);
	Py_DECREF(mod);
	if (lines == NULL) return NULL;
	PyObject *empty = PyUnicode_FromString("");
	PyObject *text = empty ? PyUnicode_Join(empty, lines) : NULL;
	Py_XDECREF(empty);
	Py_DECREF(lines);
	return text;
}

// Moves the pending Python exception into r as three strings.
static void fetch_error(p0_result *r) {
	PyObject *type = NULL, *value = NULL, *tb = NULL;
	PyErr_Fetch(&type, &value, &tb);
	if (type == NULL) {
		set_bridge_err(r, "python signalled an error without setting an exception");
		return;
	}
	PyErr_NormalizeException(&type, &value, &tb);
	if (value != NULL && tb != NULL) PyException_SetTraceback(value, tb);

	r->failed = 1;
	r->is_py_error = 1;
	r->err_type = type_name(type);
	if (r->err_type == NULL) PyErr_Clear();
	r->err_msg = value ? PyObject_Str(value) : PyUnicode_FromString("");
	if (r->err_msg == NULL) {
		PyErr_Clear();
		r->err_msg = PyUnicode_FromString("<exception str() failed>");
	}
	r->err_tb = format_traceback(type, value, tb);
	if (r->err_tb == NULL) PyErr_Clear();

	Py_XDECREF(type);
	Py_XDECREF(value);
	Py_XDECREF(tb);
}

static int is_native_float32_format(const char *f) {
	if (f == NULL) return 0;
	if (strcmp(f, "f") == 0 || strcmp(f, "=f") == 0 || strcmp(f, "@f") == 0) return 1;
#if PY_BIG_ENDIAN
	return strcmp(f, ">f") == 0 || strcmp(f, "!f") == 0;
#else
	return strcmp(f, "<f") == 0;
#endif
}

// Describes the pending exception in one line and clears it.
static void take_error_line(char *out, size_t outlen) {
	PyObject *type = NULL, *value = NULL, *tb = NULL;
	PyErr_Fetch(&type, &value, &tb);
	PyErr_NormalizeException(&type, &value, &tb);
	const char *s = NULL;
	PyObject *str = value ? PyObject_Str(value) : NULL;
	if (str != NULL) s = PyUnicode_AsUTF8(str);
	if (s == NULL) PyErr_Clear();
	snprintf(out, outlen, "%s: %s", type ? ((PyTypeObject *)type)->tp_name : "error", s ? s : "?");
	Py_XDECREF(str);
	Py_XDECREF(type);
	Py_XDECREF(value);
	Py_XDECREF(tb);
}

void p0_call(const char *module, const char *fn, const char *arg, Py_ssize_t arg_len, p0_result *r) {
	PyObject *mod = NULL, *func = NULL, *argobj = NULL, *ret = NULL;
	memset(r, 0, sizeof *r);

	mod = PyImport_ImportModule(module);
	if (mod == NULL) {
		fetch_error(r);
		goto done;
	}
	func = PyObject_GetAttrString(mod, fn);
	if (func == NULL) {
		fetch_error(r);
		goto done;
	}
	if (!PyCallable_Check(func)) {
		set_bridge_err(r, "%s.%s is a %s, not a function", module, fn, Py_TYPE(func)->tp_name);
		goto done;
	}
	argobj = PyUnicode_DecodeUTF8(arg, arg_len, "strict");
	if (argobj == NULL) {
		fetch_error(r);
		goto done;
	}
	ret = PyObject_CallOneArg(func, argobj);
	if (ret == NULL) {
		fetch_error(r);
		goto done;
	}

	PyObject *json = ret, *buf = NULL; // borrowed from ret
	if (PyTuple_Check(ret)) {
		if (PyTuple_GET_SIZE(ret) != 2) {
			set_bridge_err(r, "%s.%s returned a tuple of %zd items, want (str, float32 buffer)",
			               module, fn, PyTuple_GET_SIZE(ret));
			goto done;
		}
		json = PyTuple_GET_ITEM(ret, 0);
		buf = PyTuple_GET_ITEM(ret, 1);
	}
	if (!PyUnicode_Check(json)) {
		set_bridge_err(r, "%s.%s returned %s%s, want str (JSON) or (str, float32 buffer)",
		               module, fn, Py_TYPE(json)->tp_name, json == ret ? "" : " as the first tuple item");
		goto done;
	}
	r->json = PyUnicode_AsUTF8AndSize(json, &r->json_len);
	if (r->json == NULL) {
		char line[512];
		take_error_line(line, sizeof line);
		set_bridge_err(r, "%s.%s returned a str that is not valid UTF-8 (%s)", module, fn, line);
		goto done;
	}
	if (buf != NULL) {
		if (PyObject_GetBuffer(buf, &r->view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | PyBUF_ND) != 0) {
			char line[512];
			take_error_line(line, sizeof line);
			set_bridge_err(r, "%s.%s returned a %s that does not export a C-contiguous buffer (%s), want a float32 array",
			               module, fn, Py_TYPE(buf)->tp_name, line);
			goto done;
		}
		r->has_view = 1;
		if (r->view.itemsize != 4 || !is_native_float32_format(r->view.format)) {
			set_bridge_err(r, "%s.%s returned a buffer of format \"%s\" and itemsize %zd, want float32 (format \"f\", itemsize 4)",
			               module, fn, r->view.format ? r->view.format : "B", r->view.itemsize);
			goto done;
		}
		r->floats = (const float *)r->view.buf;
		r->n_floats = r->view.len / 4;
	}
	r->ret = ret;
	ret = NULL; // kept alive until p0_result_clear

done:
	Py_XDECREF(ret);
	Py_XDECREF(argobj);
	Py_XDECREF(func);
	Py_XDECREF(mod);
}

const char *p0_str(PyObject *s, Py_ssize_t *len) {
	*len = 0;
	if (s == NULL) return NULL;
	const char *p = PyUnicode_AsUTF8AndSize(s, len);
	if (p == NULL) {
		PyErr_Clear();
		*len = 0;
	}
	return p;
}

void p0_result_clear(p0_result *r) {
	if (r->has_view) PyBuffer_Release(&r->view);
	r->has_view = 0;
	Py_CLEAR(r->ret);
	Py_CLEAR(r->err_type);
	Py_CLEAR(r->err_msg);
	Py_CLEAR(r->err_tb);
}

int p0_finalize(void) {
	PyEval_RestoreThread(p0_saved);
	p0_saved = NULL;
	return Py_FinalizeEx();
}

// Gives the fatal signals back to the kernel's default action, so a crash in
// native code ends the process by that signal (visible to a parent as
// "killed by signal SIGSEGV") instead of a Go runtime report and exit status 2.
int p0_reset_fatal_signals(void) {
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		if (sigaction(sigs[i], &sa, NULL) != 0) return -1;
	}
	return 0;
}
