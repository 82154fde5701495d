/*
 * relay/common.h - shared definitions of the librelay public API.
 *
 * Error codes, the caller-owned error detail struct, export macros and the
 * allocator hooks used by every other public header.
 */
#ifndef RELAY_COMMON_H
#define RELAY_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(RELAY_BUILDING_LIBRARY) && defined(__GNUC__)
#define RELAY_EXTERN __attribute__((visibility("default")))
#else
#define RELAY_EXTERN
#endif

/**
 * enum relay_err - error codes returned by librelay functions.
 *
 * Every fallible function returns 0 on success or one of these negative
 * values. Unexpected failures return RELAY_ERROR (-1).
 */
enum relay_err {
	RELAY_OK = 0,
	RELAY_ERROR = -1,     /* generic failure */
	RELAY_ENOTFOUND = -2, /* the named thing does not exist */
	RELAY_EINVAL = -3,    /* invalid argument or value */
	RELAY_EPARSE = -4,    /* input could not be parsed */
	RELAY_EBACKEND = -5,  /* a backend (Redis, runtime) failed */
	RELAY_ETIMEOUT = -6,  /* an operation timed out */
	RELAY_ECLOSED = -7,   /* the handle was closed or disconnected */
	RELAY_ENOMEM = -8,    /* out of memory */
	RELAY_EUSER = -9,     /* a user callback asked to stop */
	RELAY_ETYPE = -10,    /* a value has the wrong type */
	RELAY_ESTALE = -11,   /* a fenced write lost its claim */
	RELAY_EACCESS = -12,  /* the sandbox user cannot read what it needs */
	RELAY_EAGAIN = -13,   /* the system refused a process or memory for
				 now (EAGAIN, ENOMEM): try again later */
};

/**
 * relay_strerror() - describe an error code.
 * @code: a value of enum relay_err.
 *
 * Returns: a static, never-NULL string such as "not found".
 * Thread-safety: safe from any thread.
 */
RELAY_EXTERN const char *relay_strerror(int code);

#define RELAY_ERROR_PATH_MAX 256
#define RELAY_ERROR_TEXT_MAX 160

/**
 * struct relay_error - detail of a failed compile or load.
 *
 * Caller-allocated and optional (pass NULL to ignore details), in the manner
 * of jansson's json_error_t. On failure the callee fills every field it
 * knows; line and column are 1-based and 0 when unknown; path is "" when the
 * input did not come from a file. text is one line without a trailing
 * newline and without a "failed to" prefix.
 */
typedef struct relay_error {
	int code;                            /* enum relay_err */
	char path[RELAY_ERROR_PATH_MAX];     /* file the error is in, or "" */
	int line;                            /* 1-based line, 0 if unknown */
	int column;                          /* 1-based column, 0 if unknown */
	char text[RELAY_ERROR_TEXT_MAX];     /* human-readable message */
} relay_error;

/**
 * relay_error_format() - render an error as "path:line:col: text".
 * @err: the error to render.
 * @buf: output buffer.
 * @size: size of @buf in bytes; the result is always NUL-terminated.
 *
 * Parts that are unknown (empty path, line 0) are left out.
 * Returns: @buf.
 * Thread-safety: safe from any thread.
 */
RELAY_EXTERN char *relay_error_format(const relay_error *err, char *buf,
				      size_t size);

/**
 * relay_free() - free memory that librelay returned through a char ** or
 * similar "new" out-parameter.
 * @ptr: the pointer, or NULL (no-op).
 */
RELAY_EXTERN void relay_free(void *ptr);

/**
 * relay_set_allocator() - replace the allocator used by librelay.
 * @malloc_fn, @realloc_fn, @free_fn: the three functions; all NULL restores
 *   the C library's.
 *
 * Must be called before any other librelay function and never while any
 * librelay object is alive. jansson and libfyaml keep their own allocators.
 * Thread-safety: not thread-safe.
 */
RELAY_EXTERN void relay_set_allocator(void *(*malloc_fn)(size_t),
				      void *(*realloc_fn)(void *, size_t),
				      void (*free_fn)(void *));

/**
 * relay_version() - the library version, e.g. "0.1.0".
 *
 * Returns: a static string equal to the version in meson.build.
 */
RELAY_EXTERN const char *relay_version(void);

#ifdef __cplusplus
}
#endif

#endif /* RELAY_COMMON_H */
