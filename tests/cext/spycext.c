/* SPDX-License-Identifier: MIT */
/*
 * A C extension for the --native tests: Python calls call_back(fn), a C
 * function, which calls fn back in Python.  Built by the tests for every
 * interpreter from that interpreter's own headers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Kept out of line and not a tail call, so it has a frame of its own. */
__attribute__((noinline)) static PyObject *
spycext_call_back(PyObject *self, PyObject *fn)
{
	PyObject *result = PyObject_CallObject(fn, NULL);

	if (!result)
		return NULL;
	Py_DECREF(result);
	Py_RETURN_NONE;
}

/*
 * Exported, so that this module's own calls to it go through its PLT; it
 * does next to nothing, so that a good share of the time is in the stub.
 */
__attribute__((noinline)) long spycext_next(long n)
{
	return n + 1;
}

/*
 * Call spycext_next through this module's PLT for ever (with the GIL:
 * start it once the program has said what it must).  About one stop in
 * ten is in the PLT's stub, which has no symbol.  (A call to atoi spent
 * 0-2% there, by the CPU's luck: a second could have none.)
 */
static PyObject *spycext_spin_through_plt(PyObject *self, PyObject *unused)
{
	volatile long sink = 0;

	for (;;)
		sink = spycext_next(sink);
	Py_RETURN_NONE;
}

static PyMethodDef spycext_methods[] = {
	{ "call_back", spycext_call_back, METH_O,
	  "call_back(fn): call fn() from C." },
	{ "spin_through_plt", spycext_spin_through_plt, METH_NOARGS,
	  "spin_through_plt(): call through the PLT for ever." },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef spycext_module = {
	PyModuleDef_HEAD_INIT, "spycext", NULL, -1, spycext_methods,
	NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_spycext(void)
{
	return PyModule_Create(&spycext_module);
}
