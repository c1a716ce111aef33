/* Error recording. One pending error per process (Rewind objects are used from one thread
 * per rank); the message is built once at the failure point and grows by a frame at each
 * propagating RW_CALL, so the user sees what failed first and the path that led there. */
#include "rewind/rw_error.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define RW_ERRBUF 4096

static _Thread_local char rw_errbuf[RW_ERRBUF];
static _Thread_local int rw_errcode;
static _Thread_local int rw_errframes;

const char *rw_error_string(int code)
{
  switch (code) {
#define RW_ERROR_CASE(name, value, text)                                                           \
  case value:                                                                                      \
    return text;
    RW_ERROR_LIST(RW_ERROR_CASE)
#undef RW_ERROR_CASE
  default:
    return "unknown error code";
  }
}

static void rw_append(const char *fmt, ...)
{
  size_t len = strlen(rw_errbuf);
  if (len + 1 >= RW_ERRBUF) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rw_errbuf + len, RW_ERRBUF - len, fmt, ap);
  va_end(ap);
}

int rw_error_set(int code, const char *func, const char *file, int line, const char *fmt, ...)
{
  if (code == 0) return 0;
  rw_errbuf[0] = '\0';
  rw_errcode = code;
  rw_errframes = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rw_errbuf, RW_ERRBUF, fmt, ap);
  va_end(ap);
  rw_append("\n  [%s] in %s (%s:%d)", rw_error_string(code), func, file, line);
  return code;
}

int rw_error_push(int code, const char *func, const char *file, int line)
{
  if (code == 0) return 0;
  if (rw_errcode == 0) {
    /* A code returned without a message (e.g. from a callback): give it one. */
    return rw_error_set(code, func, file, line, "%s", rw_error_string(code));
  }
  if (rw_errframes < 16) rw_append("\n  from %s (%s:%d)", func, file, line);
  rw_errframes++;
  return code;
}

void rw_error_note(const char *fmt, ...)
{
  if (rw_errcode == 0) return;
  char note[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(note, sizeof note, fmt, ap);
  va_end(ap);
  /* the message is the text before its first frame: the note goes in between */
  char *frames = strstr(rw_errbuf, "\n  [");
  size_t at = frames ? (size_t)(frames - rw_errbuf) : strlen(rw_errbuf);
  size_t tail = strlen(rw_errbuf) - at, nl = strlen(note);
  if (at + nl + tail >= RW_ERRBUF) nl = RW_ERRBUF - 1 - at - tail; /* the frames stay whole */
  memmove(rw_errbuf + at + nl, rw_errbuf + at, tail + 1);
  memcpy(rw_errbuf + at, note, nl);
}

const char *rw_error_message(void) { return rw_errbuf; }
int rw_error_last(void) { return rw_errcode; }

void rw_error_clear(void)
{
  rw_errbuf[0] = '\0';
  rw_errcode = 0;
  rw_errframes = 0;
}

int rw_error_mpi(int mpierr, const char *expr, const char *func, const char *file, int line)
{
  char msg[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (MPI_Error_string(mpierr, msg, &len) != MPI_SUCCESS)
    snprintf(msg, sizeof msg, "code %d", mpierr);
  return rw_error_set(RW_ERR_MPI, func, file, line, "%s failed: %s", expr, msg);
}

/* Agrees on a failure across the ranks of `comm` (see rw_context.h). Collective. */
int rw_error_agree(MPI_Comm comm, int ierr)
{
  int rank = 0, size = 1, first = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int mine = ierr ? rank : size;
  int e = MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (e != MPI_SUCCESS)
    return rw_error_mpi(e, "MPI_Allreduce (error agreement)", __func__, __FILE__, __LINE__);
  if (first == size) return 0;
  static _Thread_local char msg[RW_ERRBUF];
  int code = ierr;
  if (rank == first) memcpy(msg, rw_errbuf, sizeof msg);
  if ((e = MPI_Bcast(&code, 1, MPI_INT, first, comm)) != MPI_SUCCESS ||
      (e = MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, comm)) != MPI_SUCCESS)
    return rw_error_mpi(e, "MPI_Bcast (error agreement)", __func__, __FILE__, __LINE__);
  if (rank == first) return code;
  msg[sizeof msg - 1] = '\0';
  rw_error_clear();
  return rw_error_set(code, __func__, __FILE__, __LINE__, "on rank %d: %s", first, msg);
}
