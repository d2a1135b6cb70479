// The method table of phase0._native. Every function that runs Go work
// releases the GIL while it waits, and polls for signals so Ctrl-C in the
// caller cancels the run (the worker child is killed) and raises
// KeyboardInterrupt. Only stable-ABI calls (Py_LIMITED_API 3.10) are used.
#include <Python.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "_cgo_export.h"

// loaded_pid is the process that imported the module. The Go runtime's
// threads do not survive fork(): a child calling into Go would hang, so it is
// refused instead.
static pid_t loaded_pid;

// pollMillis is how often a waiting call checks for Ctrl-C.
enum { pollMillis = 50 };

static int refuse_forked(void) {
    if (getpid() != loaded_pid) {
        PyErr_SetString(PyExc_RuntimeError,
                        "phase0 cannot run in a process created by os.fork() after it was imported "
                        "(the Go runtime's threads do not survive fork); call it in the parent, "
                        "or use a subprocess / multiprocessing with the 'spawn' or 'forkserver' start method");
        return -1;
    }
    return 0;
}

static PyObject *decode(const char *buf, size_t len) {
    return PyUnicode_DecodeUTF8(len ? buf : "", (Py_ssize_t)len, "replace");
}

// execute(args: Sequence[str], overrides_json: str, mode: int) -> (code, stdout, stderr)
static PyObject *execute(PyObject *self, PyObject *pyargs) {
    PyObject *seq;
    const char *overrides;
    int mode;
    (void)self;
    if (!PyArg_ParseTuple(pyargs, "Osi", &seq, &overrides, &mode)) {
        return NULL;
    }
    if (refuse_forked() < 0) {
        return NULL;
    }
    PyObject *fast = PySequence_Tuple(seq);
    if (fast == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_Size(fast);
    char **argv = calloc((size_t)n + 1, sizeof(char *));
    if (argv == NULL) {
        Py_DECREF(fast);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GetItem(fast, i);
        if (item == NULL || !PyUnicode_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "phase0: every argument must be a str");
            free(argv);
            Py_DECREF(fast);
            return NULL;
        }
        // The UTF-8 buffers live as long as fast; p0start copies them.
        Py_ssize_t size;
        argv[i] = (char *)PyUnicode_AsUTF8AndSize(item, &size);
        if (argv[i] == NULL) {
            free(argv);
            Py_DECREF(fast);
            return NULL;
        }
        // Go reads a C string: it would stop at an embedded NUL and see another argument.
        if (strlen(argv[i]) != (size_t)size) {
            PyErr_Format(PyExc_ValueError, "phase0: argument %zd holds a NUL character", i + 1);
            free(argv);
            Py_DECREF(fast);
            return NULL;
        }
    }
    long long h = p0start(argv, (int)n, (char *)overrides, mode);
    free(argv);
    Py_DECREF(fast);

    int done = 0, interrupted = 0;
    while (!done) {
        Py_BEGIN_ALLOW_THREADS
        done = p0wait(h, pollMillis);
        Py_END_ALLOW_THREADS
        if (!done && PyErr_CheckSignals() < 0) {
            // A signal handler raised (KeyboardInterrupt): stop the run and
            // wait for it to unwind, so no child outlives the exception.
            p0cancel(h);
            Py_BEGIN_ALLOW_THREADS
            p0wait(h, -1);
            Py_END_ALLOW_THREADS
            interrupted = 1;
            done = 1;
        }
    }
    char *out = NULL, *err = NULL;
    size_t outLen = 0, errLen = 0;
    int code = p0finish(h, &out, &outLen, &err, &errLen);
    PyObject *result = NULL;
    if (!interrupted) {
        PyObject *o = decode(out, outLen), *e = decode(err, errLen);
        if (o != NULL && e != NULL) {
            result = Py_BuildValue("(iOO)", code, o, e);
        }
        Py_XDECREF(o);
        Py_XDECREF(e);
    }
    free(out);
    free(err);
    return result;
}

static PyObject *set_worker(PyObject *self, PyObject *pyargs) {
    const char *path;
    (void)self;
    if (!PyArg_ParseTuple(pyargs, "s", &path)) {
        return NULL;
    }
    if (refuse_forked() < 0) {
        return NULL;
    }
    p0setworker((char *)path);
    Py_RETURN_NONE;
}

static PyObject *forked(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(getpid() != loaded_pid);
}

static PyMethodDef methods[] = {
    {"execute", execute, METH_VARARGS,
     "execute(args, overrides_json, mode) -> (exit_code, stdout, stderr): run the phase0 command line"},
    {"set_worker", set_worker, METH_VARARGS, "set_worker(path): the phase0 binary the worker child runs"},
    {"forked", forked, METH_NOARGS, "forked() -> bool: this process was forked after the import"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "phase0._native", "phase0's Go core (the command line, run in-process).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) {
    loaded_pid = getpid();
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) {
        return NULL;
    }
    char *v = p0version();
    if (PyModule_AddStringConstant(m, "version", v) < 0) {
        free(v);
        Py_DECREF(m);
        return NULL;
    }
    free(v);
    return m;
}
