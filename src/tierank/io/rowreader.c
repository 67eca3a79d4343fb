/* tierank.io.rowreader: the rows of a dict of dicts in one pass, as the buffers of typed columns.
 *
 * Python's own reading of {query: {doc: score}} spends most of its time on objects: a list of the
 * keys, pyarrow's conversion of that list, a pass counting the values' types, numpy's conversion of
 * the values (four passes over every row). Here one pass checks the types and one copies the UTF-8
 * bytes of the keys and the numbers. Only the plain case is taken: every row exactly a dict, every
 * key exactly a str, every value exactly a float (or every one exactly an int within int64). For
 * anything else the function answers None and io/tables.py reads the rows in Python, whose rules
 * (and errors) then apply: the columns are the same either way (tests/test_dict_reading.py).
 * docs/architecture.md (io/) says where this sits; nothing here runs Python code, so the dicts
 * cannot change between the two passes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Whether every key and value of the rows has the plain types; their count and the keys' bytes. */
static int
plain_rows(PyObject *rows, Py_ssize_t *n, Py_ssize_t *length, int *kind)
{
    for (Py_ssize_t r = 0; r < PyList_GET_SIZE(rows); r++) {
        PyObject *row = PyList_GET_ITEM(rows, r), *key, *value;
        Py_ssize_t pos = 0, size;
        if (!PyDict_CheckExact(row))
            return 0;
        while (PyDict_Next(row, &pos, &key, &value)) {
            /* the UTF-8 form is kept by the str (for ASCII it is the str's own bytes) */
            if (!PyUnicode_CheckExact(key) || PyUnicode_AsUTF8AndSize(key, &size) == NULL)
                return 0;
            if (!*kind)
                *kind = PyFloat_CheckExact(value) ? 'f' : 'i';
            if (*kind == 'f' ? !PyFloat_CheckExact(value) : !PyLong_CheckExact(value))
                return 0;
            if (*kind == 'i') {
                int overflow;
                long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
                if (overflow || (v == -1 && PyErr_Occurred()))
                    return 0;
            }
            *length += size;
            *n += 1;
        }
    }
    return 1;
}

static PyObject *
string_rows(PyObject *Py_UNUSED(module), PyObject *rows)
{
    Py_ssize_t n = 0, length = 0;
    int kind = 0;
    if (!PyList_CheckExact(rows)) {
        PyErr_SetString(PyExc_TypeError, "string_rows takes a list of dicts");
        return NULL;
    }
    if (!plain_rows(rows, &n, &length, &kind) || n == 0 || length > INT32_MAX) {
        PyErr_Clear();   /* a key that is not valid UTF-8 (a lone surrogate) */
        Py_RETURN_NONE;
    }
    PyObject *offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * (Py_ssize_t)sizeof(int32_t));
    PyObject *data = PyBytes_FromStringAndSize(NULL, length);
    PyObject *values = PyBytes_FromStringAndSize(NULL, n * 8);
    if (offsets == NULL || data == NULL || values == NULL) {
        Py_XDECREF(offsets);
        Py_XDECREF(data);
        Py_XDECREF(values);
        return NULL;
    }
    int32_t *ends = (int32_t *)PyBytes_AS_STRING(offsets);
    char *text = PyBytes_AS_STRING(data);
    double *floats = (double *)PyBytes_AS_STRING(values);
    int64_t *ints = (int64_t *)PyBytes_AS_STRING(values);
    Py_ssize_t i = 0, at = 0;
    ends[0] = 0;
    for (Py_ssize_t r = 0; r < PyList_GET_SIZE(rows); r++) {
        PyObject *row = PyList_GET_ITEM(rows, r), *key, *value;
        Py_ssize_t pos = 0, size;
        while (PyDict_Next(row, &pos, &key, &value)) {
            const char *utf8 = PyUnicode_AsUTF8AndSize(key, &size);
            memcpy(text + at, utf8, (size_t)size);
            at += size;
            ends[i + 1] = (int32_t)at;
            if (kind == 'f')
                floats[i] = PyFloat_AS_DOUBLE(value);
            else
                ints[i] = (int64_t)PyLong_AsLongLong(value);
            i++;
        }
    }
    return Py_BuildValue("(NNNC)", offsets, data, values, kind);
}

static PyMethodDef methods[] = {
    {"string_rows", string_rows, METH_O,
     "string_rows(rows, /)\n--\n\n"
     "The rows (a list of dicts {str: float}, or {str: int} within int64) as (offsets, data, values, kind):\n"
     "int32 offsets and UTF-8 bytes of the keys (an Arrow string array's buffers), their values as\n"
     "float64 ('f') or int64 ('i') bytes. None when a row, key or value has another type."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef rowreader = {
    PyModuleDef_HEAD_INIT, .m_name = "tierank.io.rowreader", .m_size = 0, .m_methods = methods,
};

PyMODINIT_FUNC
PyInit_rowreader(void)
{
    return PyModule_Create(&rowreader);
}
