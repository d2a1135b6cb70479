// C half of package bridge. Every function that touches Python objects runs
// with the GIL held on the OS thread that initialized the interpreter; the Go
// side guarantees that by serving all calls from one locked goroutine. Python
// is reached only through the function table py (capi.h).
#include "bridge.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The interpreter's main thread state while the GIL is released between calls.
static PyThreadState *p0_saved;

#define P0_XDECREF(o) py.Py_DecRef(o) // Py_DecRef accepts NULL
#define P0_CLEAR(o)          \
	do {                     \
		PyObject *t_ = (o);  \
		(o) = NULL;          \
		py.Py_DecRef(t_);    \
	} while (0)

static unsigned long type_flags(PyObject *o) {
	PyObject *t = py.PyObject_Type(o);
	unsigned long f = t ? py.PyType_GetFlags(t) : 0;
	P0_XDECREF(t);
	return f;
}

static int is_str(PyObject *o) { return (type_flags(o) & P0_TPFLAGS_UNICODE_SUBCLASS) != 0; }
static int is_tuple(PyObject *o) { return (type_flags(o) & P0_TPFLAGS_TUPLE_SUBCLASS) != 0; }
static int is_list(PyObject *o) { return (type_flags(o) & P0_TPFLAGS_LIST_SUBCLASS) != 0; }

// Copies type.__name__ into out ("?" when it cannot be had); leaves no exception set.
static void class_name(PyObject *type, char *out, size_t outlen) {
	snprintf(out, outlen, "?");
	PyObject *name = type ? py.PyObject_GetAttrString(type, "__name__") : NULL;
	const char *s = name && is_str(name) ? py.PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
	if (s != NULL) snprintf(out, outlen, "%s", s);
	if (s == NULL) py.PyErr_Clear();
	P0_XDECREF(name);
}

// The name of o's type.
static void type_name_of(PyObject *o, char *out, size_t outlen) {
	PyObject *t = py.PyObject_Type(o);
	class_name(t, out, outlen);
	P0_XDECREF(t);
}

// Initializes the interpreter the way `program -I` would find it: isolated
// (PYTHON* variables, user site-packages and the current directory cannot
// change what gets imported), the venv found from program's pyvenv.cfg, no
// Python signal handlers (the Go runtime owns signals), UTF-8 mode (the C
// locale the Go process runs in would make file names and stdio ASCII-only),
// unbuffered stdio (progress reaches the parent live and survives crashes),
// no __pycache__ next to the shim.
//
// Py_InitializeEx reports a failure by printing "Fatal Python error" and
// aborting the process; the Go side checks the interpreter beforehand
// (Inspect), and Python runs in a disposable child (package worker).
int p0_init(const wchar_t *program, size_t program_len) {
	// Py_SetProgramName keeps the pointer: the copy lives as long as the process.
	wchar_t *name = calloc(program_len + 1, sizeof(wchar_t));
	if (name == NULL) return -1;
	memcpy(name, program, program_len * sizeof(wchar_t));

	*py.Py_IsolatedFlag = 1;
	*py.Py_IgnoreEnvironmentFlag = 1;
	*py.Py_NoUserSiteDirectory = 1;
	*py.Py_DontWriteBytecodeFlag = 1;
	*py.Py_UnbufferedStdioFlag = 1;
	*py.Py_UTF8Mode = 1;
	py.Py_SetProgramName(name);
	py.Py_InitializeEx(0);
	p0_saved = py.PyEval_SaveThread();
	return 0;
}

void p0_enter(void) { py.PyEval_RestoreThread(p0_saved); }
void p0_leave(void) { p0_saved = py.PyEval_SaveThread(); }

// Called with the GIL held.
int p0_prepend_sys_path(const char *dir, char *err, size_t errlen) {
	PyObject *path = py.PySys_GetObject("path"); // borrowed
	if (path == NULL || !is_list(path)) {
		snprintf(err, errlen, "sys.path is missing or not a list");
		return -1;
	}
	PyObject *item = py.PyUnicode_DecodeFSDefault(dir);
	if (item == NULL) {
		py.PyErr_Clear();
		snprintf(err, errlen, "cannot decode path %s", dir);
		return -1;
	}
	int rc = py.PyList_Insert(path, 0, item);
	py.Py_DecRef(item);
	if (rc != 0) {
		py.PyErr_Clear();
		snprintf(err, errlen, "cannot insert %s into sys.path", dir);
		return -1;
	}
	return 0;
}

// Called with the GIL held. Copies str(sys.<name>) into out.
int p0_sys_str(const char *name, char *out, size_t outlen) {
	PyObject *v = py.PySys_GetObject(name); // borrowed
	if (v == NULL || !is_str(v)) return -1;
	Py_ssize_t n = 0;
	const char *s = py.PyUnicode_AsUTF8AndSize(v, &n);
	if (s == NULL) {
		py.PyErr_Clear();
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
static PyObject *qualified_type_name(PyObject *type) {
	PyObject *qual = py.PyObject_GetAttrString(type, "__qualname__");
	PyObject *mod = py.PyObject_GetAttrString(type, "__module__");
	PyObject *name = NULL;
	if (qual != NULL && is_str(qual)) {
		if (mod != NULL && is_str(mod) && py.PyUnicode_CompareWithASCIIString(mod, "builtins") != 0) {
			name = py.PyUnicode_FromFormat("%U.%U", mod, qual);
		} else {
			py.Py_IncRef(qual);
			name = qual;
		}
	}
	P0_XDECREF(qual);
	P0_XDECREF(mod);
	if (name == NULL) {
		py.PyErr_Clear();
		char buf[256];
		class_name(type, buf, sizeof buf);
		name = py.PyUnicode_FromString(buf);
	}
	return name;
}

static PyObject *format_traceback(PyObject *type, PyObject *value, PyObject *tb) {
	PyObject *mod = py.PyImport_ImportModule("traceback");
	if (mod == NULL) return NULL;
	PyObject *lines = py.PyObject_CallMethod(mod, "format_exception", "OOO", type,
	                                         value ? value : py.None, tb ? tb : py.None);
	py.Py_DecRef(mod);
	if (lines == NULL) return NULL;
	PyObject *empty = py.PyUnicode_FromString("");
	PyObject *text = empty ? py.PyUnicode_Join(empty, lines) : NULL;
	P0_XDECREF(empty);
	py.Py_DecRef(lines);
	return text;
}

// Moves the pending Python exception into r as three strings.
static void fetch_error(p0_result *r) {
	PyObject *type = NULL, *value = NULL, *tb = NULL;
	py.PyErr_Fetch(&type, &value, &tb);
	if (type == NULL) {
		set_bridge_err(r, "python signalled an error without setting an exception");
		return;
	}
	py.PyErr_NormalizeException(&type, &value, &tb);
	if (value != NULL && tb != NULL) py.PyException_SetTraceback(value, tb);

	r->failed = 1;
	r->is_py_error = 1;
	r->err_type = qualified_type_name(type);
	if (r->err_type == NULL) py.PyErr_Clear();
	r->err_msg = value ? py.PyObject_Str(value) : py.PyUnicode_FromString("");
	if (r->err_msg == NULL) {
		py.PyErr_Clear();
		r->err_msg = py.PyUnicode_FromString("<exception str() failed>");
	}
	r->err_tb = format_traceback(type, value, tb);
	if (r->err_tb == NULL) py.PyErr_Clear();

	P0_XDECREF(type);
	P0_XDECREF(value);
	P0_XDECREF(tb);
}

static int is_native_float32_format(const char *f) {
	if (f == NULL) return 0;
	if (strcmp(f, "f") == 0 || strcmp(f, "=f") == 0 || strcmp(f, "@f") == 0) return 1;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return strcmp(f, ">f") == 0 || strcmp(f, "!f") == 0;
#else
	return strcmp(f, "<f") == 0;
#endif
}

// Describes the pending exception in one line and clears it.
static void take_error_line(char *out, size_t outlen) {
	PyObject *type = NULL, *value = NULL, *tb = NULL;
	py.PyErr_Fetch(&type, &value, &tb);
	py.PyErr_NormalizeException(&type, &value, &tb);
	char name[128];
	class_name(type, name, sizeof name);
	const char *s = NULL;
	PyObject *str = value ? py.PyObject_Str(value) : NULL;
	if (str != NULL) s = py.PyUnicode_AsUTF8AndSize(str, NULL);
	if (s == NULL) py.PyErr_Clear();
	snprintf(out, outlen, "%s: %s", type ? name : "error", s ? s : "?");
	P0_XDECREF(str);
	P0_XDECREF(type);
	P0_XDECREF(value);
	P0_XDECREF(tb);
}

void p0_call(const char *module, const char *fn, const char *arg, Py_ssize_t arg_len, p0_result *r) {
	PyObject *mod = NULL, *func = NULL, *argobj = NULL, *ret = NULL;
	char tname[128];
	memset(r, 0, sizeof *r);

	mod = py.PyImport_ImportModule(module);
	if (mod == NULL) {
		fetch_error(r);
		goto done;
	}
	func = py.PyObject_GetAttrString(mod, fn);
	if (func == NULL) {
		fetch_error(r);
		goto done;
	}
	if (!py.PyCallable_Check(func)) {
		type_name_of(func, tname, sizeof tname);
		set_bridge_err(r, "%s.%s is a %s, not a function", module, fn, tname);
		goto done;
	}
	argobj = py.PyUnicode_DecodeUTF8(arg, arg_len, "strict");
	if (argobj == NULL) {
		fetch_error(r);
		goto done;
	}
	ret = py.PyObject_CallFunctionObjArgs(func, argobj, NULL);
	if (ret == NULL) {
		fetch_error(r);
		goto done;
	}

	PyObject *json = ret, *buf = NULL; // borrowed from ret
	if (is_tuple(ret)) {
		Py_ssize_t n = py.PyTuple_Size(ret);
		if (n != 2) {
			set_bridge_err(r, "%s.%s returned a tuple of %zd items, want (str, float32 buffer)", module, fn, n);
			goto done;
		}
		json = py.PyTuple_GetItem(ret, 0);
		buf = py.PyTuple_GetItem(ret, 1);
	}
	if (!is_str(json)) {
		type_name_of(json, tname, sizeof tname);
		set_bridge_err(r, "%s.%s returned %s%s, want str (JSON) or (str, float32 buffer)",
		               module, fn, tname, json == ret ? "" : " as the first tuple item");
		goto done;
	}
	r->json = py.PyUnicode_AsUTF8AndSize(json, &r->json_len);
	if (r->json == NULL) {
		char line[512];
		take_error_line(line, sizeof line);
		set_bridge_err(r, "%s.%s returned a str that is not valid UTF-8 (%s)", module, fn, line);
		goto done;
	}
	if (buf != NULL) {
		if (py.PyObject_GetBuffer(buf, &r->view, P0_PyBUF_FORMAT | P0_PyBUF_C_CONTIGUOUS) != 0) {
			char line[512];
			take_error_line(line, sizeof line);
			type_name_of(buf, tname, sizeof tname);
			set_bridge_err(r, "%s.%s returned a %s that does not export a C-contiguous buffer (%s), want a float32 array",
			               module, fn, tname, line);
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
	P0_XDECREF(ret);
	P0_XDECREF(argobj);
	P0_XDECREF(func);
	P0_XDECREF(mod);
}

const char *p0_str(PyObject *s, Py_ssize_t *len) {
	*len = 0;
	if (s == NULL) return NULL;
	const char *p = py.PyUnicode_AsUTF8AndSize(s, len);
	if (p == NULL) {
		py.PyErr_Clear();
		*len = 0;
	}
	return p;
}

void p0_result_clear(p0_result *r) {
	if (r->has_view) py.PyBuffer_Release(&r->view);
	r->has_view = 0;
	P0_CLEAR(r->ret);
	P0_CLEAR(r->err_type);
	P0_CLEAR(r->err_msg);
	P0_CLEAR(r->err_tb);
}

int p0_finalize(void) {
	py.PyEval_RestoreThread(p0_saved);
	p0_saved = NULL;
	return py.Py_FinalizeEx();
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
