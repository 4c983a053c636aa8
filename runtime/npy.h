/* npy.h: reading and writing NumPy .npy files (format versions 1.0-3.0, C order,
 * little-endian). Self-contained (libc only) so bnnrun and tests can use it. */
#ifndef BNN_NPY_H
#define BNN_NPY_H

#include <stddef.h>
#include <stdint.h>

#define NPY_MAX_RANK 8

typedef enum {
    NPY_F32,
    NPY_F64,
    NPY_F16,
    NPY_I64,
    NPY_I32,
    NPY_I16,
    NPY_I8,
    NPY_U8,
    NPY_BOOL,
    NPY_DTYPE_COUNT
} NpyDtype;

typedef struct NpyArray {
    NpyDtype dtype;
    int rank;
    int64_t shape[NPY_MAX_RANK];
    void *data;    /* numel * npy_dtype_size(dtype) bytes, malloc'ed */
    size_t nbytes;
} NpyArray;

const char *npy_dtype_name(NpyDtype t); /* "float32", "uint8", ... */
size_t npy_dtype_size(NpyDtype t);
int64_t npy_numel(const NpyArray *a);

/* Read path into *out. Returns 0, or -1 with a message in err (err_len bytes) that
 * names the file and the problem (not a .npy file, truncated, unsupported dtype
 * such as '>f4' or 'O', Fortran order, ...). */
int npy_read(const char *path, NpyArray *out, char *err, size_t err_len);
/* Same, from memory. */
int npy_parse(const void *bytes, size_t len, const char *name, NpyArray *out, char *err,
              size_t err_len);
/* Write atomically (a temporary file renamed into place). 0 ok, -1 with err. */
int npy_write(const char *path, const NpyArray *a, char *err, size_t err_len);
void npy_free(NpyArray *a);

#endif
