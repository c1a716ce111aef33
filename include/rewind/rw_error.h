/* Rewind error codes and the error-handling macros used by every layer.
 *
 * Every Rewind function returns an int error code: 0 (RW_SUCCESS) or one of the codes
 * below. The sign carries meaning (as in libCEED): a positive code is a user error or a
 * recoverable condition and leaves the object unchanged; a negative code means an internal
 * or third-party failure after which the object may be inconsistent and should be destroyed.
 *
 * The first failing call records a message (what failed and how to fix it); each RW_CALL
 * that propagates the code appends a "  from func (file:line)" frame. Checks are compiled
 * in every build type. */
#ifndef REWIND_RW_ERROR_H
#define REWIND_RW_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X-macro list: name, value, short description. */
#define RW_ERROR_LIST(X)                                                                           \
  X(RW_SUCCESS, 0, "success")                                                                      \
  X(RW_ERR_ARG, 1, "invalid argument")                                                             \
  X(RW_ERR_DECK, 2, "invalid input deck")                                                          \
  X(RW_ERR_BUDGET, 3, "memory budget too small")                                                   \
  X(RW_ERR_IO, 4, "file input/output failed")                                                      \
  X(RW_ERR_NOT_IMPLEMENTED, 5, "operation not implemented")                                        \
  X(RW_ERR_DRIFT, 6, "reconstruction drift above tolerance")                                       \
  X(RW_ERR_STEP, 7, "time step failed")                                                            \
  X(RW_ERR_NO_DEVICE, 8, "no GPU device available")                                                \
  X(RW_ERR_MEM, -1, "out of memory")                                                               \
  X(RW_ERR_MPI, -2, "MPI call failed")                                                             \
  X(RW_ERR_HDF5, -3, "HDF5 call failed")                                                           \
  X(RW_ERR_SUNDIALS, -4, "SUNDIALS call failed")                                                   \
  X(RW_ERR_CUDA, -5, "CUDA call failed")                                                           \
  X(RW_ERR_PETSC, -6, "PETSc call failed")                                                         \
  X(RW_ERR_INTERNAL, -7, "internal error (a bug in Rewind)")

typedef enum {
#define RW_ERROR_ENUM(name, value, text) name = value,
  RW_ERROR_LIST(RW_ERROR_ENUM)
#undef RW_ERROR_ENUM
} rw_error_code;

/* Short fixed description of a code ("out of memory"). Not collective. */
const char *rw_error_string(int code);

/* Records `code` with a printf-style message and returns `code`. It replaces any pending
 * message and its frames (a new failure is the one to report); use it at the point of
 * failure. Not collective. */
int rw_error_set(int code, const char *func, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* Appends a call-site frame to the pending error and returns `code`. Not collective. */
int rw_error_push(int code, const char *func, const char *file, int line);

/* Adds printf-style text to the end of the pending error's message (before its frames); nothing
 * when none is pending. Not collective. */
void rw_error_note(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* The pending error message with its frames ("" when none). Not collective. */
const char *rw_error_message(void);

/* The pending error code (0 when none). Not collective. */
int rw_error_last(void);

/* Forgets the pending error. Not collective. */
void rw_error_clear(void);

#define RW_ERROR(code, ...) rw_error_set((code), __func__, __FILE__, __LINE__, __VA_ARGS__)

/* Propagate a Rewind error code to the caller. */
#define RW_CALL(expr)                                                                              \
  do {                                                                                             \
    int rw_call_ierr_ = (expr);                                                                    \
    if (rw_call_ierr_) return rw_error_push(rw_call_ierr_, __func__, __FILE__, __LINE__);          \
  } while (0)

/* In functions with a cleanup label: set `ierr` and jump to `cleanup` on failure. */
#define RW_TRY(expr)                                                                               \
  do {                                                                                             \
    ierr = (expr);                                                                                 \
    if (ierr) {                                                                                    \
      rw_error_push(ierr, __func__, __FILE__, __LINE__);                                           \
      goto cleanup;                                                                                \
    }                                                                                              \
  } while (0)

/* User-facing check (always compiled): on false, record and return `code`. */
#define RW_CHECK(cond, code, ...)                                                                  \
  do {                                                                                             \
    if (!(cond)) return RW_ERROR((code), __VA_ARGS__);                                             \
  } while (0)

/* Same, with a jump to `cleanup`. */
#define RW_CHECK_GOTO(cond, code, ...)                                                             \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      ierr = RW_ERROR((code), __VA_ARGS__);                                                        \
      goto cleanup;                                                                                \
    }                                                                                              \
  } while (0)

/* MPI: every call checked, the MPI error string goes into the message. */
int rw_error_mpi(int mpierr, const char *expr, const char *func, const char *file, int line);
#define RW_CALL_MPI(expr)                                                                          \
  do {                                                                                             \
    int rw_mpi_ierr_ = (expr);                                                                     \
    if (rw_mpi_ierr_) return rw_error_mpi(rw_mpi_ierr_, #expr, __func__, __FILE__, __LINE__);      \
  } while (0)

/* Same, in functions with a cleanup label. */
#define RW_TRY_MPI(expr)                                                                           \
  do {                                                                                             \
    int rw_mpi_ierr_ = (expr);                                                                     \
    if (rw_mpi_ierr_) {                                                                            \
      ierr = rw_error_mpi(rw_mpi_ierr_, #expr, __func__, __FILE__, __LINE__);                      \
      goto cleanup;                                                                                \
    }                                                                                              \
  } while (0)

/* SUNDIALS functions returning int flags (0 = success, negative = failure). */
#define RW_CALL_SUNDIALS(expr)                                                                     \
  do {                                                                                             \
    int rw_sun_ierr_ = (expr);                                                                     \
    if (rw_sun_ierr_ < 0) return RW_ERROR(RW_ERR_SUNDIALS, "%s returned %d", #expr, rw_sun_ierr_); \
  } while (0)

#ifdef __cplusplus
}
#endif
#endif
