// C half of package bridge: the only code in phase0 that touches the CPython C API.
#ifndef PHASE0_BRIDGE_H
#define PHASE0_BRIDGE_H

#include "capi.h"

// The outcome of one call. Everything it points to stays valid until
// p0_result_clear, so Go copies it once and never owns Python memory.
typedef struct {
	int failed;        // 1 when the call did not produce a usable result
	int is_py_error;   // 1 when failed because Python raised (err_* are set)
	PyObject *err_type;   // str: qualified exception type name
	PyObject *err_msg;    // str: str(exception)
	PyObject *err_tb;     // str: traceback.format_exception output joined
	char bridge_err[1024]; // set when failed && !is_py_error

	PyObject *ret;       // the function's return value (owns the JSON string)
	const char *json;
	Py_ssize_t json_len;

	int has_view;        // 1 when the function returned (str, buffer)
	Py_buffer view;
	const float *floats;
	Py_ssize_t n_floats;
} p0_result;

int p0_init(const wchar_t *program, size_t program_len);
int p0_prepend_sys_path(const char *dir, char *err, size_t errlen);
int p0_sys_str(const char *name, char *out, size_t outlen);
void p0_enter(void);
void p0_leave(void);
void p0_call(const char *module, const char *fn, const char *arg, Py_ssize_t arg_len, p0_result *r);
const char *p0_str(PyObject *s, Py_ssize_t *len);
void p0_result_clear(p0_result *r);
int p0_finalize(void);
int p0_reset_fatal_signals(void);
int p0_expose_reuse(char *err, size_t errlen);

#endif
