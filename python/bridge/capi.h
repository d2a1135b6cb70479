// The part of the CPython C API the bridge uses, declared here instead of
// taken from Python.h: libpython is chosen at run time (any CPython
// 3.10–3.14 with the GIL), so phase0 is built without Python headers and every
// function is reached through a pointer that p0_load fills with dlsym.
//
// Only what is the same in all of those versions is declared: PyObject and
// the thread state stay opaque (type checks go through PyType_GetFlags,
// reference counts through Py_IncRef/Py_DecRef, because the inline macros
// changed with immortal objects in 3.12), and Py_buffer, whose layout is part
// of the stable ABI.
#ifndef PHASE0_CAPI_H
#define PHASE0_CAPI_H

#include <stddef.h>
#include <sys/types.h>
#include <wchar.h>

typedef ssize_t Py_ssize_t;
typedef struct _object PyObject;
typedef struct _ts PyThreadState;

typedef struct {
	void *buf;
	PyObject *obj;
	Py_ssize_t len;
	Py_ssize_t itemsize;
	int readonly;
	int ndim;
	char *format;
	Py_ssize_t *shape;
	Py_ssize_t *strides;
	Py_ssize_t *suboffsets;
	void *internal;
} Py_buffer;

// Stable values from object.h and pybuffer.h.
#define P0_TPFLAGS_TUPLE_SUBCLASS (1UL << 26)
#define P0_TPFLAGS_UNICODE_SUBCLASS (1UL << 28)
#define P0_TPFLAGS_LIST_SUBCLASS (1UL << 25)
#define P0_PyBUF_FORMAT 0x0004
#define P0_PyBUF_ND 0x0008
#define P0_PyBUF_C_CONTIGUOUS (0x0020 | 0x0010 | P0_PyBUF_ND)
#define P0_METH_NOARGS 0x0004
#define P0_METH_O 0x0008

// PyMethodDef (stable ABI): a C function PyCFunction_NewEx makes callable.
typedef struct {
	const char *ml_name;
	void *ml_meth;
	int ml_flags;
	const char *ml_doc;
} p0_method;

// X(return type, name, parameter list) for every function the bridge calls.
#define P0_FUNCTIONS(X) \
	X(const char *, Py_GetVersion, (void)) \
	X(void, Py_SetProgramName, (const wchar_t *)) \
	X(void, Py_InitializeEx, (int)) \
	X(int, Py_FinalizeEx, (void)) \
	X(PyThreadState *, PyEval_SaveThread, (void)) \
	X(void, PyEval_RestoreThread, (PyThreadState *)) \
	X(void, Py_IncRef, (PyObject *)) \
	X(void, Py_DecRef, (PyObject *)) \
	X(PyObject *, PyObject_Type, (PyObject *)) \
	X(unsigned long, PyType_GetFlags, (PyObject *)) \
	X(PyObject *, PySys_GetObject, (const char *)) \
	X(int, PyList_Insert, (PyObject *, Py_ssize_t, PyObject *)) \
	X(Py_ssize_t, PyTuple_Size, (PyObject *)) \
	X(PyObject *, PyTuple_GetItem, (PyObject *, Py_ssize_t)) \
	X(PyObject *, PyUnicode_DecodeFSDefault, (const char *)) \
	X(PyObject *, PyUnicode_DecodeUTF8, (const char *, Py_ssize_t, const char *)) \
	X(PyObject *, PyUnicode_FromString, (const char *)) \
	X(PyObject *, PyUnicode_FromFormat, (const char *, ...)) \
	X(const char *, PyUnicode_AsUTF8AndSize, (PyObject *, Py_ssize_t *)) \
	X(int, PyUnicode_CompareWithASCIIString, (PyObject *, const char *)) \
	X(PyObject *, PyUnicode_Join, (PyObject *, PyObject *)) \
	X(PyObject *, PyObject_GetAttrString, (PyObject *, const char *)) \
	X(PyObject *, PyObject_Str, (PyObject *)) \
	X(int, PyCallable_Check, (PyObject *)) \
	X(PyObject *, PyObject_CallFunctionObjArgs, (PyObject *, ...)) \
	X(PyObject *, PyObject_CallMethod, (PyObject *, const char *, const char *, ...)) \
	X(PyObject *, PyImport_ImportModule, (const char *)) \
	X(void, PyErr_Clear, (void)) \
	X(void, PyErr_Fetch, (PyObject **, PyObject **, PyObject **)) \
	X(void, PyErr_NormalizeException, (PyObject **, PyObject **, PyObject **)) \
	X(int, PyException_SetTraceback, (PyObject *, PyObject *)) \
	X(int, PyObject_GetBuffer, (PyObject *, Py_buffer *, int)) \
	X(void, PyBuffer_Release, (Py_buffer *)) \
	X(PyObject *, PyErr_Occurred, (void)) \
	X(PyObject *, PyModule_New, (const char *)) \
	X(PyObject *, PyCapsule_New, (void *, const char *, void (*)(PyObject *))) \
	X(PyObject *, PyCFunction_NewEx, (p0_method *, PyObject *, PyObject *)) \
	X(int, PyObject_SetAttrString, (PyObject *, const char *, PyObject *)) \
	X(int, PyDict_SetItemString, (PyObject *, const char *, PyObject *)) \
	X(size_t, PyLong_AsSize_t, (PyObject *)) \
	X(PyObject *, PyLong_FromSize_t, (size_t)) \
	X(PyObject *, Py_BuildValue, (const char *, ...))

// The legacy global configuration variables (deprecated in 3.12, still read
// by Py_InitializeEx through 3.14): the one way to configure an isolated
// interpreter that does not depend on the layout of PyConfig, which changes
// with every minor version.
#define P0_FLAGS(X) \
	X(Py_IsolatedFlag) \
	X(Py_IgnoreEnvironmentFlag) \
	X(Py_NoUserSiteDirectory) \
	X(Py_DontWriteBytecodeFlag) \
	X(Py_UnbufferedStdioFlag) \
	X(Py_UTF8Mode)

typedef struct {
#define P0_FIELD(ret, name, params) ret(*name) params;
	P0_FUNCTIONS(P0_FIELD)
#undef P0_FIELD
#define P0_FLAG_FIELD(name) int *name;
	P0_FLAGS(P0_FLAG_FIELD)
#undef P0_FLAG_FIELD
	PyObject *None; // _Py_NoneStruct
} p0_api;

// The loaded library's functions; valid after p0_load returned 0.
extern p0_api py;

// Opens the shared libpython at path (RTLD_GLOBAL, so extension modules such
// as NumPy and torch, which are not linked against libpython, resolve their
// Py* symbols from it) and resolves every symbol above. want_version is the
// "3.12." prefix Py_GetVersion must start with.
int p0_load(const char *path, const char *want_version, char *err, size_t errlen);

#endif
