/* The launch fast path of tilec, in C: `kernel[grid](*args)` for a
 * specialization launched before through the same grid.
 *
 * A `Launcher` belongs to one kernel and one static grid.  It holds a few
 * entries, one per specialization seen through it; an entry says where each
 * parameter's value comes from (a position or a keyword), what it must be for
 * the specialization to apply (a tensor of this type, dtype, device and
 * 16-byte alignment; an i32 of this alignment other than 1; exactly 1; a
 * float; a bool; a constexpr equal to this value), which module globals the kernel read, and how to
 * launch it (the CUfunction, threads, dynamic shared bytes, and one argument
 * block `void *params[]`).  A call that matches an entry writes the values
 * into that entry's argument block and calls cuLaunchKernel (through the
 * entry's function pointer) on the current stream; for a CPU
 * kernel it calls the kernel's `tilec_<name>_packed` on this thread, without
 * the GIL, when the grid has fewer programs than the entry's limit (larger
 * grids go to the Python path's thread pool).  Anything
 * else (an unseen specialization, an unusual argument, an error) goes to the
 * Python fallback (called with the same arguments), which runs the general
 * path and may add an entry.
 *
 * Built on first use by tilec.runtime.native with the system C compiler;
 * without one, tilec launches through the equivalent Python path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define MAX_ENTRIES 8
#define ANY_VALUE 2       /* `aligned` of a parameter not specialized on its value */

/* K_DENSE: a tensor as K_TENSOR that must also be contiguous (its elements share no
 * memory); a non-contiguous one goes to the Python path, which checks its layout. */
enum { K_CONST = 0, K_TENSOR = 1, K_I32 = 2, K_F32 = 3, K_BOOL = 4, K_ONE = 5, K_NDARRAY = 6,
       K_DENSE = 7 };

typedef int (*launch_fn_t)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                           unsigned by, unsigned bz, unsigned shared, void *stream,
                           void **params, void **extra);
/* A CPU kernel's `tilec_<name>_packed(void **args, g0, g1, g2, start, end)`. */
typedef void (*cpu_fn_t)(void **params, int32_t gx, int32_t gy, int32_t gz, int64_t start,
                         int64_t end);

typedef struct {
    Py_ssize_t pos;       /* positional index, or -1: take it from `kw` */
    PyObject *kw;         /* keyword name (str) or NULL */
    int kind;
    PyObject *expect;     /* K_CONST: the value; K_TENSOR, K_NDARRAY: the array type */
    PyObject *dtype;      /* K_TENSOR: the dtype object; K_NDARRAY: the buffer format (str) */
    PyObject *is_cuda;    /* K_TENSOR: is_cuda; K_NDARRAY: read-only (Py_True / Py_False) */
    int aligned;          /* K_TENSOR, K_NDARRAY, K_I32: whether the value is 16-divisible;
                             ANY_VALUE: not checked (do_not_specialize) */
    Py_ssize_t slot;      /* runtime parameters: index in the argument block */
    int has_exact;        /* the value must be `exact` (a TMA kernel's entry: its tensor
                             maps were encoded for these pointers and sizes) */
    uint64_t exact;
} Check;

typedef struct {
    Py_ssize_t nargs, nkw, nchecks, nslots, nglobals;
    Check *checks;
    PyObject **global_names, **global_values;
    void *function;
    unsigned threads, shared;
    launch_fn_t launch;   /* CUDA: cuLaunchKernel */
    cpu_fn_t cpu_fn;      /* non-NULL: a CPU kernel, called here when the grid is small */
    long long cpu_max;    /* ... smaller than this many programs */
    char *name;           /* CPU: the kernel's name, for the crash handler */
    uint64_t *storage;
    void **params;
    void *maps;           /* TMA kernels: the 128-byte tensor maps after the parameters */
} Entry;

typedef struct {
    PyObject_HEAD
    unsigned grid[3];
    PyObject *fallback, *on_error, *get_device, *get_stream, *globals;
    Entry *entries[MAX_ENTRIES];
    int count, next;      /* entries used; where the next one goes once full */
    int busy;             /* inside a match: Python code it runs must not change entries */
    PyObject *name_dtype, *name_is_cuda, *name_data_ptr, *name_is_contiguous;
} Launcher;

/* The CPU kernel running now (set around each launch, here and by
 * tilec/runtime/cpu.py through `running_slot()`), named by the fatal-signal
 * handler: a crash inside a kernel says which kernel it was, then the
 * previous handler (faulthandler's, or the default) runs as before. */
static const char *volatile tilec_running = NULL;
static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
static struct sigaction previous[4];
static int hook_installed = 0;

static void say(const char *text) {
    ssize_t n = write(2, text, strlen(text));
    (void)n;
}

static void crash_handler(int sig) {
    const char *name = tilec_running;
    int k = 0;
    while (k < 3 && crash_signals[k] != sig) k++;
    if (name != NULL) {
        say("\ntilec: fatal signal ");
        say(sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE"
                                                                               : "SIGILL");
        say(" while the CPU kernel '");
        say(name);
        say("' was running (an out-of-bounds access? rerun with TILEC_DEBUG=1 or "
            "@tilec.kernel(debug=True) to have it checked)\n");
    }
    /* On to the previous handler (faulthandler's dump, or the default: death). */
    sigaction(sig, &previous[k], NULL);
    raise(sig);
}

static PyObject *install_crash_hook(PyObject *mod, PyObject *unused) {
    if (!hook_installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = crash_handler;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_NODEFER;
        for (int k = 0; k < 4; k++) sigaction(crash_signals[k], &sa, &previous[k]);
        hook_installed = 1;
    }
    return PyLong_FromVoidPtr((void *)&tilec_running);
}

static void entry_free(Entry *e) {
    if (e == NULL) return;
    for (Py_ssize_t i = 0; i < e->nchecks; i++) {
        Check *c = &e->checks[i];
        Py_XDECREF(c->kw); Py_XDECREF(c->expect); Py_XDECREF(c->dtype); Py_XDECREF(c->is_cuda);
    }
    for (Py_ssize_t i = 0; i < e->nglobals; i++) {
        Py_XDECREF(e->global_names[i]); Py_XDECREF(e->global_values[i]);
    }
    PyMem_Free(e->checks); PyMem_Free(e->global_names); PyMem_Free(e->global_values);
    PyMem_Free(e->storage); PyMem_Free(e->params); PyMem_Free(e->name); PyMem_Free(e->maps);
    PyMem_Free(e);
}

/* The value a check reads: borrowed, NULL when absent (no match). */
static PyObject *source(const Check *c, PyObject *args, PyObject *kwargs) {
    if (c->pos >= 0) return PyTuple_GET_ITEM(args, c->pos);
    if (kwargs == NULL) return NULL;
    PyObject *v = PyDict_GetItemWithError(kwargs, c->kw);
    if (v == NULL) PyErr_Clear();
    return v;
}

/* 1: the call matches and the argument block is filled; 0: no match. */
static int try_entry(Launcher *self, Entry *e, PyObject *args, PyObject *kwargs) {
    Py_ssize_t nkw = kwargs ? PyDict_GET_SIZE(kwargs) : 0;
    if (PyTuple_GET_SIZE(args) != e->nargs || nkw != e->nkw) return 0;
    for (Py_ssize_t i = 0; i < e->nchecks; i++) {
        const Check *c = &e->checks[i];
        PyObject *v = source(c, args, kwargs);
        if (v == NULL) return 0;
        uint64_t *slot = c->slot >= 0 ? &e->storage[c->slot] : NULL;
        switch (c->kind) {
        case K_CONST: {
            if (v == c->expect) break;
            if (Py_TYPE(v) != Py_TYPE(c->expect)) return 0;
            int eq = PyObject_RichCompareBool(v, c->expect, Py_EQ);
            if (eq != 1) { if (eq < 0) PyErr_Clear(); return 0; }
            break;
        }
        case K_TENSOR:
        case K_DENSE: {
            if ((PyObject *)Py_TYPE(v) != c->expect) return 0;
            PyObject *a = PyObject_GetAttr(v, self->name_dtype);
            if (a == NULL) { PyErr_Clear(); return 0; }
            int same = a == c->dtype;
            Py_DECREF(a);
            if (!same) return 0;
            a = PyObject_GetAttr(v, self->name_is_cuda);
            if (a == NULL) { PyErr_Clear(); return 0; }
            same = a == c->is_cuda;
            Py_DECREF(a);
            if (!same) return 0;
            if (c->kind == K_DENSE) {
                a = PyObject_CallMethodNoArgs(v, self->name_is_contiguous);
                if (a == NULL) { PyErr_Clear(); return 0; }
                same = a == Py_True;
                Py_DECREF(a);
                if (!same) return 0;
            }
            PyObject *p = PyObject_CallMethodNoArgs(v, self->name_data_ptr);
            if (p == NULL) { PyErr_Clear(); return 0; }
            unsigned long long ptr = PyLong_AsUnsignedLongLong(p);
            Py_DECREF(p);
            if (ptr == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
            if (ptr == 0) return 0;  /* a meta or empty tensor: the Python path */
            if (c->aligned != ANY_VALUE && ((ptr & 15) == 0) != c->aligned) return 0;
            *slot = (uint64_t)ptr;
            break;
        }
        case K_NDARRAY: {  /* a NumPy array, through the buffer protocol */
            if ((PyObject *)Py_TYPE(v) != c->expect) return 0;
            Py_buffer view;
            if (PyObject_GetBuffer(v, &view, PyBUF_STRIDES | PyBUF_FORMAT) < 0) {
                PyErr_Clear();
                return 0;
            }
            const char *want = PyUnicode_AsUTF8(c->dtype);
            int ok = want != NULL && view.format != NULL && strcmp(view.format, want) == 0 &&
                     (view.readonly != 0) == (c->is_cuda == Py_True);
            uintptr_t ptr = (uintptr_t)view.buf;
            PyBuffer_Release(&view);
            if (!ok) { PyErr_Clear(); return 0; }
            if (c->aligned != ANY_VALUE && ((ptr & 15) == 0) != c->aligned) return 0;
            *slot = (uint64_t)ptr;
            break;
        }
        case K_I32: {
            if (!PyLong_CheckExact(v)) return 0;
            int overflow = 0;
            long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (overflow || x < INT32_MIN || x > INT32_MAX) return 0;
            if (c->aligned != ANY_VALUE) {
                if (x == 1) return 0;  /* 1 is its own specialization (K_ONE) */
                if (((x & 15) == 0) != c->aligned) return 0;
            }
            int32_t x32 = (int32_t)x;
            memcpy(slot, &x32, sizeof x32);
            break;
        }
        case K_ONE: {  /* an int the kernel was specialized to: exactly 1 */
            if (!PyLong_CheckExact(v)) return 0;
            int overflow = 0;
            if (PyLong_AsLongLongAndOverflow(v, &overflow) != 1 || overflow) {
                if (PyErr_Occurred()) PyErr_Clear();
                return 0;
            }
            int32_t one = 1;
            memcpy(slot, &one, sizeof one);
            break;
        }
        case K_F32: {
            if (!PyFloat_CheckExact(v)) return 0;
            float f = (float)PyFloat_AS_DOUBLE(v);
            memcpy(slot, &f, sizeof f);
            break;
        }
        case K_BOOL: {
            if (v != Py_True && v != Py_False) return 0;
            uint8_t b = v == Py_True;
            memcpy(slot, &b, sizeof b);
            break;
        }
        default:
            return 0;
        }
        if (c->has_exact) {
            uint64_t got = *slot;
            if (c->kind == K_I32) got = (uint64_t)(int64_t)*(int32_t *)slot;
            if (got != c->exact) return 0;
        }
    }
    for (Py_ssize_t i = 0; i < e->nglobals; i++) {
        PyObject *v = PyDict_GetItemWithError(self->globals, e->global_names[i]);
        if (v == NULL) {
            if (PyErr_Occurred()) { PyErr_Clear(); return 0; }
            v = Py_None;
        }
        if (v != e->global_values[i]) return 0;
    }
    return 1;
}

static int current_stream(Launcher *self, void **stream) {
    *stream = NULL;
    if (self->get_stream == Py_None) return 0;
    PyObject *s;
    if (self->get_device != Py_None) {
        PyObject *d = PyObject_CallNoArgs(self->get_device);
        if (d == NULL) return -1;
        s = PyObject_CallOneArg(self->get_stream, d);
        Py_DECREF(d);
    } else {
        s = PyObject_CallNoArgs(self->get_stream);
    }
    if (s == NULL) return -1;
    unsigned long long h = PyLong_AsUnsignedLongLong(s);
    Py_DECREF(s);
    if (h == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    *stream = (void *)(uintptr_t)h;
    return 0;
}

static int initialized(Launcher *self) {
    if (self->fallback != NULL && self->name_data_ptr != NULL) return 1;
    PyErr_SetString(PyExc_TypeError, "Launcher.__init__ was not called");
    return 0;
}

static PyObject *Launcher_call(Launcher *self, PyObject *args, PyObject *kwargs) {
    if (!initialized(self)) return NULL;
    for (int k = 0; !self->busy && k < self->count; k++) {
        Entry *e = self->entries[k];
        self->busy = 1;
        int hit = try_entry(self, e, args, kwargs);
        if (!hit) { self->busy = 0; continue; }
        if (e->cpu_fn != NULL) {
            long long total = (long long)self->grid[0] * self->grid[1] * self->grid[2];
            if (total >= e->cpu_max) { self->busy = 0; break; }  /* the thread pool's job */
            if (total > 0) {
                Py_BEGIN_ALLOW_THREADS  /* `busy` keeps other threads on the Python path */
                const char *before = tilec_running;
                tilec_running = e->name;
                e->cpu_fn(e->params, (int32_t)self->grid[0], (int32_t)self->grid[1],
                          (int32_t)self->grid[2], 0, (int64_t)total);
                tilec_running = before;
                Py_END_ALLOW_THREADS
            }
            self->busy = 0;
            Py_RETURN_NONE;
        }
        if (e->launch == NULL) { self->busy = 0; break; }
        void *stream = NULL;
        int code = 0;
        if (self->grid[0] && self->grid[1] && self->grid[2]) {
            if (current_stream(self, &stream) < 0) { self->busy = 0; return NULL; }
            code = e->launch(e->function, self->grid[0], self->grid[1], self->grid[2],
                                e->threads, 1, 1, e->shared, stream, e->params, NULL);
        }
        self->busy = 0;
        if (code != 0) return PyObject_CallFunction(self->on_error, "i", code);
        Py_RETURN_NONE;
    }
    return PyObject_Call(self->fallback, args, kwargs);
}

/* Launcher.add((nargs, nkw, checks, globals, function, threads, shared, nslots, launch,
 *               cpu_fn, cpu_max[, name[, maps]])): `launch` (cuLaunchKernel) for a CUDA kernel,
 *               `cpu_fn` (its packed entry) and `name` (bytes) for a CPU kernel, 0 for
 *               the other
 * maps: a TMA kernel's tensor maps (128 bytes each), passed after the parameters
 * checks: ((pos or name, kind, expect, dtype, is_cuda, aligned, slot[, exact]), ...)
 * globals: ((name, value), ...) */
static PyObject *Launcher_add(Launcher *self, PyObject *spec) {
    Py_ssize_t nargs, nkw, nslots;
    PyObject *checks, *globals;
    unsigned long long function, launch, cpu_fn;
    unsigned threads, shared;
    long long cpu_max;
    const char *name = NULL;
    const char *maps = NULL;
    Py_ssize_t maps_len = 0;
    if (!initialized(self)) return NULL;
    if (self->busy) Py_RETURN_NONE;  /* called from inside a match: leave the entries be */
    if (!PyTuple_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "a launcher entry is a tuple");
        return NULL;
    }
    if (!PyArg_ParseTuple(spec, "nnO!O!KIInKKL|yy#", &nargs, &nkw, &PyTuple_Type, &checks,
                          &PyTuple_Type, &globals, &function, &threads, &shared, &nslots,
                          &launch, &cpu_fn, &cpu_max, &name, &maps, &maps_len))
        return NULL;
    if (nargs < 0 || nkw < 0 || nslots < 0 || nslots > 4096 || maps_len % 128 ||
        maps_len > 128 * 64) {
        PyErr_SetString(PyExc_ValueError, "bad launcher entry sizes");
        return NULL;
    }
    Entry *e = PyMem_Calloc(1, sizeof(Entry));
    if (e == NULL) return PyErr_NoMemory();
    e->nargs = nargs; e->nkw = nkw; e->nslots = nslots;
    e->function = (void *)(uintptr_t)function; e->threads = threads; e->shared = shared;
    e->launch = (launch_fn_t)(uintptr_t)launch;
    e->cpu_fn = (cpu_fn_t)(uintptr_t)cpu_fn; e->cpu_max = cpu_max;
    if (name != NULL) {
        e->name = PyMem_Malloc(strlen(name) + 1);
        if (e->name == NULL) { entry_free(e); return PyErr_NoMemory(); }
        memcpy(e->name, name, strlen(name) + 1);
    }
    Py_ssize_t nc = PyTuple_GET_SIZE(checks), ng = PyTuple_GET_SIZE(globals);
    e->checks = PyMem_Calloc(nc ? nc : 1, sizeof(Check));
    e->global_names = PyMem_Calloc(ng ? ng : 1, sizeof(PyObject *));
    e->global_values = PyMem_Calloc(ng ? ng : 1, sizeof(PyObject *));
    e->storage = PyMem_Calloc(nslots ? nslots : 1, sizeof(uint64_t));
    Py_ssize_t nmaps = maps_len / 128;
    e->params = PyMem_Calloc(nslots + nmaps ? nslots + nmaps : 1, sizeof(void *));
    e->maps = nmaps ? PyMem_Malloc(maps_len + 64) : NULL;
    if (!e->checks || !e->global_names || !e->global_values || !e->storage || !e->params ||
        (nmaps && !e->maps)) {
        entry_free(e);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < nslots; i++) e->params[i] = &e->storage[i];
    if (nmaps) {
        char *at = (char *)(((uintptr_t)e->maps + 63) & ~(uintptr_t)63);
        memcpy(at, maps, (size_t)maps_len);
        for (Py_ssize_t i = 0; i < nmaps; i++) e->params[nslots + i] = at + 128 * i;
    }
    for (Py_ssize_t i = 0; i < nc; i++) {
        PyObject *src, *expect, *dtype, *is_cuda, *exact = Py_None;
        int kind, aligned;
        Py_ssize_t slot;
        Check *c = &e->checks[i];
        e->nchecks = i;  /* what entry_free releases if this one fails */
        PyObject *item = PyTuple_GET_ITEM(checks, i);
        if (!PyTuple_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "a launcher check is a tuple");
            entry_free(e);
            return NULL;
        }
        if (!PyArg_ParseTuple(item, "OiOOOin|O", &src, &kind, &expect, &dtype, &is_cuda,
                              &aligned, &slot, &exact)) {
            entry_free(e);
            return NULL;
        }
        int runtime = kind != K_CONST;
        if (kind < K_CONST || kind > K_DENSE || (runtime && (slot < 0 || slot >= nslots)) ||
            (!runtime && slot != -1) ||
            (PyLong_Check(src) ? PyLong_AsSsize_t(src) < 0 || PyLong_AsSsize_t(src) >= nargs
                               : !PyUnicode_Check(src)) ||
            ((kind == K_TENSOR || kind == K_DENSE || kind == K_NDARRAY) && !PyType_Check(expect)) ||
            (kind == K_NDARRAY && !PyUnicode_Check(dtype))) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "bad launcher check");
            entry_free(e);
            return NULL;
        }
        c->pos = PyLong_Check(src) ? PyLong_AsSsize_t(src) : -1;
        c->kw = c->pos < 0 ? Py_NewRef(src) : NULL;
        c->kind = kind; c->aligned = aligned; c->slot = runtime ? slot : -1;
        if (exact != Py_None) {
            long long x = PyLong_AsLongLong(exact);
            if (x == -1 && PyErr_Occurred()) { entry_free(e); return NULL; }
            c->has_exact = 1;
            c->exact = (uint64_t)x;
        }
        c->expect = Py_NewRef(expect); c->dtype = Py_NewRef(dtype); c->is_cuda = Py_NewRef(is_cuda);
    }
    e->nchecks = nc;
    for (Py_ssize_t i = 0; i < ng; i++) {
        PyObject *name, *value;
        e->nglobals = i;
        PyObject *item = PyTuple_GET_ITEM(globals, i);
        if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "UO", &name, &value)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "a launcher global is a (name, value) tuple");
            entry_free(e);
            return NULL;
        }
        e->global_names[i] = Py_NewRef(name);
        e->global_values[i] = Py_NewRef(value);
    }
    e->nglobals = ng;
    if (self->count < MAX_ENTRIES) {
        self->entries[self->count++] = e;
    } else {  /* full: replace the oldest */
        entry_free(self->entries[self->next]);
        self->entries[self->next] = e;
        self->next = (self->next + 1) % MAX_ENTRIES;
    }
    Py_RETURN_NONE;
}

static PyObject *Launcher_clear(Launcher *self, PyObject *Py_UNUSED(ignored)) {
    if (self->busy) Py_RETURN_NONE;
    for (int k = 0; k < self->count; k++) { entry_free(self->entries[k]); self->entries[k] = NULL; }
    self->count = 0; self->next = 0;
    Py_RETURN_NONE;
}

static PyObject *Launcher_len(Launcher *self, void *Py_UNUSED(closure)) {
    return PyLong_FromLong(self->count);
}

/* Launcher(grid, fallback(*args, **kwargs), on_error(code), get_device, get_stream,
 *          globals) */
static int Launcher_init(Launcher *self, PyObject *args, PyObject *Py_UNUSED(kwds)) {
    PyObject *fallback, *on_error, *get_device, *get_stream, *globals;
    unsigned gx, gy, gz;
    if (!PyArg_ParseTuple(args, "(III)OOOOO!", &gx, &gy, &gz, &fallback, &on_error,
                          &get_device, &get_stream, &PyDict_Type, &globals))
        return -1;
    if (!PyCallable_Check(fallback) || !PyCallable_Check(on_error)) {
        PyErr_SetString(PyExc_ValueError, "Launcher needs two callables");
        return -1;
    }
    self->grid[0] = gx; self->grid[1] = gy; self->grid[2] = gz;
    Py_XSETREF(self->fallback, Py_NewRef(fallback));
    Py_XSETREF(self->on_error, Py_NewRef(on_error));
    Py_XSETREF(self->get_device, Py_NewRef(get_device));
    Py_XSETREF(self->get_stream, Py_NewRef(get_stream));
    Py_XSETREF(self->globals, Py_NewRef(globals));
    if (!self->name_dtype) self->name_dtype = PyUnicode_InternFromString("dtype");
    if (!self->name_is_cuda) self->name_is_cuda = PyUnicode_InternFromString("is_cuda");
    if (!self->name_data_ptr) self->name_data_ptr = PyUnicode_InternFromString("data_ptr");
    if (!self->name_is_contiguous)
        self->name_is_contiguous = PyUnicode_InternFromString("is_contiguous");
    if (!self->name_dtype || !self->name_is_cuda || !self->name_data_ptr ||
        !self->name_is_contiguous) return -1;
    return 0;
}

static int Launcher_traverse(Launcher *self, visitproc visit, void *arg) {
    Py_VISIT(self->fallback); Py_VISIT(self->on_error); Py_VISIT(self->get_device);
    Py_VISIT(self->get_stream); Py_VISIT(self->globals);
    for (int k = 0; k < self->count; k++) {
        Entry *e = self->entries[k];
        for (Py_ssize_t i = 0; i < e->nchecks; i++) {
            Py_VISIT(e->checks[i].expect); Py_VISIT(e->checks[i].dtype);
        }
        for (Py_ssize_t i = 0; i < e->nglobals; i++) Py_VISIT(e->global_values[i]);
    }
    return 0;
}

static int Launcher_clear_refs(Launcher *self) {
    Py_CLEAR(self->fallback); Py_CLEAR(self->on_error); Py_CLEAR(self->get_device);
    Py_CLEAR(self->get_stream); Py_CLEAR(self->globals);
    for (int k = 0; k < self->count; k++) { entry_free(self->entries[k]); self->entries[k] = NULL; }
    self->count = 0; self->next = 0;
    return 0;
}

static void Launcher_dealloc(Launcher *self) {
    PyObject_GC_UnTrack(self);
    Launcher_clear_refs(self);
    Py_XDECREF(self->name_dtype); Py_XDECREF(self->name_is_cuda); Py_XDECREF(self->name_data_ptr);
    Py_XDECREF(self->name_is_contiguous);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Launcher_methods[] = {
    {"add", (PyCFunction)Launcher_add, METH_O, "Add a specialization's entry."},
    {"clear", (PyCFunction)Launcher_clear, METH_NOARGS, "Forget every entry."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Launcher_getset[] = {
    {"entries", (getter)Launcher_len, NULL, "How many entries are held.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_tilec_launch.Launcher",
    .tp_basicsize = sizeof(Launcher),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A kernel's launcher for one static grid, with its fast path in C.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Launcher_init,
    .tp_dealloc = (destructor)Launcher_dealloc,
    .tp_traverse = (traverseproc)Launcher_traverse,
    .tp_clear = (inquiry)Launcher_clear_refs,
    .tp_call = (ternaryfunc)Launcher_call,
    .tp_methods = Launcher_methods,
    .tp_getset = Launcher_getset,
};

static PyMethodDef module_methods[] = {
    {"install_crash_hook", install_crash_hook, METH_NOARGS,
     "Install the fatal-signal handler (once); the address of the running kernel's name."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef launch_module = {
    PyModuleDef_HEAD_INIT, "_tilec_launch", "tilec's launch fast path.", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__tilec_launch(void) {
    if (PyType_Ready(&LauncherType) < 0) return NULL;
    PyObject *m = PyModule_Create(&launch_module);
    if (m == NULL) return NULL;
    Py_INCREF(&LauncherType);
    if (PyModule_AddObject(m, "Launcher", (PyObject *)&LauncherType) < 0) {
        Py_DECREF(&LauncherType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "ABI", 1) < 0) { Py_DECREF(m); return NULL; }
    return m;
}
