/* Input decks: PETSc's YAML reader and options-file conventions under one table of known keys.
 *
 * How a deck is built. PETSc 3.18 does not record where an option came from, so the deck
 * keeps its own list of entries (name, raw value, source) and fills it in stages, lowest
 * precedence first: the embedded default YAML text, the deck file (argv[1]), then the
 * command line from left to right (a -options_file on the command line is a stage of its own
 * at its place). Each YAML text is loaded first with libyaml (yaml_check: syntax errors with
 * their line and column, keys set twice), then parsed by PETSc into a scratch PetscOptions
 * object whose entries are then listed with PetscOptionsLeftGet (nothing has queried it, so
 * every entry is "left") and merged: a later stage replaces the value and the source of an
 * earlier one. Plain options files are tokenised here, following PETSc's rules (one
 * "-key value" per line, '#' starts a comment), because PETSc's reader fails on rank 0 only
 * while the other ranks wait in a broadcast: every file is read on rank 0 and broadcast, and
 * every rank parses the same text, so every rank finds the same problems and returns the same
 * message.
 *
 * After the stages, every entry must be a known key or one of PETSc's own runtime options
 * (see rw_deck_petsc_names), and every known key's effective value (entry or table default)
 * is parsed and checked against its type and range. A key set twice within one file or YAML
 * text is a problem naming both lines (PETSc would keep the later value silently). All
 * problems are collected into one message. */
#include "rewind/rw_deck.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <petscsys.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* ---------------------------------------------------------------------------------------- */
/* Small helpers                                                                            */
/* ---------------------------------------------------------------------------------------- */

#define RW_DECK_MAX_FILE  (16L * 1024 * 1024) /* deck files larger than this are refused */
#define RW_DECK_MAX_DEPTH 8                   /* nested -options_file levels */
#define RW_DECK_MAX_SHOWN 20                  /* problems listed in one message */

enum { SRC_UNSET = -2, SRC_TABLE = -1, SRC_DEFAULT_DECK = 0, SRC_CMDLINE = 1 };

static int lower(int c) { return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c; }

static int streq_ci(const char *a, const char *b)
{
  for (; *a && *b; a++, b++)
    if (lower((unsigned char)*a) != lower((unsigned char)*b)) return 0;
  return *a == *b;
}

/* Case-insensitive comparison of the n bytes at a with the whole string b. */
static int strneq_ci(const char *a, size_t n, const char *b)
{
  if (strlen(b) != n) return 0;
  for (size_t i = 0; i < n; i++)
    if (lower((unsigned char)a[i]) != lower((unsigned char)b[i])) return 0;
  return 1;
}

static int is_space(int c)
{
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

static int dup_str(const char *s, size_t n, char **out)
{
  char *d = NULL;
  RW_CALL(rw_calloc(n + 1, 1, "deck string", &d));
  if (n) memcpy(d, s, n);
  d[n] = '\0';
  *out = d;
  return 0;
}

static int dup_cstr(const char *s, char **out) { return dup_str(s, strlen(s), out); }

/* The text s without leading and trailing white space, without copying: returns its start
 * and sets *len to its length. */
static const char *trim_span(const char *s, size_t *len)
{
  if (!s) s = "";
  while (is_space((unsigned char)*s))
    s++;
  size_t n = strlen(s);
  while (n && is_space((unsigned char)s[n - 1]))
    n--;
  *len = n;
  return s;
}

/* Text without leading and trailing white space, copied into buf (truncated to len). */
static const char *trimmed(const char *s, char *buf, size_t len)
{
  size_t n = 0;
  s = trim_span(s, &n);
  if (n >= len) n = len - 1;
  memmove(buf, s, n); /* buf may be s itself */
  buf[n] = '\0';
  return buf;
}

/* A growing text buffer on the counting allocator. */
typedef struct {
  char *s;
  size_t len, cap;
} strbuf;

static int sb_vprintf(strbuf *b, const char *fmt, va_list ap)
{
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return RW_ERROR(RW_ERR_INTERNAL, "vsnprintf failed on format '%s'", fmt);
  if (b->len + (size_t)n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + (size_t)n + 1)
      cap *= 2;
    char *s = NULL;
    RW_CALL(rw_calloc(cap, 1, "deck text buffer", &s));
    if (b->len) memcpy(s, b->s, b->len);
    rw_free(&b->s);
    b->s = s;
    b->cap = cap;
  }
  vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
  b->len += (size_t)n;
  return 0;
}

static int sb_printf(strbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int sb_printf(strbuf *b, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int ierr = sb_vprintf(b, fmt, ap);
  va_end(ap);
  return ierr;
}

static void sb_free(strbuf *b)
{
  rw_free(&b->s);
  b->len = b->cap = 0;
}

/* Optimal-string-alignment distance (Levenshtein plus adjacent transpositions), ignoring
 * case. Names longer than 127 characters get a large distance. */
static int edit_distance(const char *a, size_t na, const char *b)
{
  size_t nb = strlen(b);
  if (na > 127 || nb > 127) return 1000;
  int d0[128], d1[128], d2[128]; /* rows i-2, i-1, i */
  int *pp = d0, *p = d1, *c = d2;
  for (size_t j = 0; j <= nb; j++)
    p[j] = (int)j;
  for (size_t i = 1; i <= na; i++) {
    c[0] = (int)i;
    for (size_t j = 1; j <= nb; j++) {
      int ca = lower((unsigned char)a[i - 1]), cb = lower((unsigned char)b[j - 1]);
      int cost = ca != cb;
      int v = p[j] + 1;
      if (c[j - 1] + 1 < v) v = c[j - 1] + 1;
      if (p[j - 1] + cost < v) v = p[j - 1] + cost;
      if (i > 1 && j > 1 && ca == lower((unsigned char)b[j - 2]) &&
          lower((unsigned char)a[i - 2]) == cb && pp[j - 2] + 1 < v)
        v = pp[j - 2] + 1;
      c[j] = v;
    }
    int *t = pp;
    pp = p;
    p = c;
    c = t;
  }
  return p[nb];
}

/* How far a misspelling may be from a name to be suggested. */
static int suggest_limit(size_t len) { return len <= 4 ? 1 : len <= 8 ? 2 : 3; }

/* ---------------------------------------------------------------------------------------- */
/* PETSc's own runtime options                                                              */
/* ---------------------------------------------------------------------------------------- */

/* PETSc options a PETSc user may pass to any PETSc program. They are accepted anywhere in a
 * deck, are not validated and are not written by rw_deck_to_yaml. On the command line they
 * are handed to PetscInitialize when rw_deck_create starts PETSc itself (so -log_view,
 * -malloc_debug, -info work); -help/-h, -options_file, -options_file_yaml and
 * -options_string_yaml are handled by the deck itself. */
/* clang-format off */
static const char *const rw_deck_petsc_names[] = {
    "help", "h", "version", "options_file", "options_file_yaml", "options_string_yaml",
    "options_left", "options_view", "options_monitor", "options_monitor_cancel", "skip_petscrc",
    "log_view", "log_view_memory", "log_view_gpu_time", "log_all", "log_trace", "log_exclude",
    "log_sync", "log_mpe", "info", "info_exclude", "malloc", "malloc_debug", "malloc_dump",
    "malloc_test", "malloc_view", "malloc_view_threshold", "malloc_coalesce",
    "malloc_requested_size", "malloc_hbw", "memory_view", "check_pointer_intensity", "fp_trap",
    "no_signal_handler", "on_error_abort", "on_error_attach_debugger", "on_error_emacs",
    "start_in_debugger", "stop_for_debugger", "debugger_ranks", "debugger_pause",
    "debug_terminal", "display", "objects_dump", "history", "mpi_linear_solver_server",
    "petsc_ci", "use_gpu_aware_mpi"};
/* clang-format on */
#define RW_DECK_NPETSC ((int)(sizeof rw_deck_petsc_names / sizeof rw_deck_petsc_names[0]))

static int is_petsc_name(const char *name)
{
  for (int i = 0; i < RW_DECK_NPETSC; i++)
    if (streq_ci(name, rw_deck_petsc_names[i])) return 1;
  return 0;
}

static int is_help_name(const char *name) { return streq_ci(name, "help") || streq_ci(name, "h"); }

/* The option names that the deck reads itself and never hands to PETSc. */
static int is_deck_handled_name(const char *name)
{
  return is_help_name(name) || streq_ci(name, "options_file") ||
         streq_ci(name, "options_file_yaml") || streq_ci(name, "options_string_yaml");
}

/* PETSc's rule (PetscOptionsValidKey) for a token that starts an option: one or two dashes,
 * then a letter, and not a number such as -inf. Anything else is a value. */
static int is_key_token(const char *t)
{
  if (!t || t[0] != '-') return 0;
  if (t[1] == '-') t++;
  if (!isalpha((unsigned char)t[1])) return 0;
  char *end = NULL;
  (void)strtod(t, &end);
  if (end != t && !(*end == '_' || isalnum((unsigned char)*end))) return 0;
  return 1;
}

static const char *strip_dashes(const char *t)
{
  if (t[0] == '-') t++;
  if (t[0] == '-') t++;
  return t;
}

/* PETSc initialisation is process-wide: PETSc cannot start again after PetscFinalize, so
 * decks that share the initialisation done here are counted, and the last one finalises. */
static struct {
  int refs;      /* live decks that hold the PETSc initialisation done here */
  int finalized; /* PetscFinalize ran here */
  int argc;      /* the arguments handed to PetscInitialize (live until PetscFinalize) */
  char **argv;
} rw_petsc;

static void petsc_args_free(void)
{
  if (!rw_petsc.argv) return;
  for (int i = 0; i < rw_petsc.argc; i++)
    rw_free(&rw_petsc.argv[i]);
  rw_free(&rw_petsc.argv);
  rw_petsc.argc = 0;
}

/* Starts PETSc when nobody has, forwarding PETSc's runtime options from argv. */
static int petsc_start(MPI_Comm comm, const char *app, const rw_deck_key *keys, int nkeys, int argc,
                       char **argv, int *owned)
{
  PetscBool inited = PETSC_FALSE, fin = PETSC_FALSE;
  *owned = 0;
  if (!argv) argc = 0;
  if (PetscInitialized(&inited) || PetscFinalized(&fin))
    return RW_ERROR(RW_ERR_PETSC, "cannot query PETSc's initialisation state");
  if (inited) {
    if (rw_petsc.refs > 0) {
      rw_petsc.refs++;
      *owned = 1;
    }
    return 0;
  }
  RW_CHECK(!fin && !rw_petsc.finalized, RW_ERR_PETSC,
           "PETSc was finalised earlier in this process and cannot be initialised again; keep "
           "one deck alive for the whole run (or call PetscInitialize before rw_deck_create "
           "and PetscFinalize at the end)");
  int ierr = 0, n = 1;
  RW_CALL(rw_calloc((size_t)(argc > 0 ? argc : 0) + 2, sizeof(char *), "PETSc arguments",
                    &rw_petsc.argv));
  RW_TRY(dup_cstr(argc > 0 && argv && argv[0] ? argv[0] : app, &rw_petsc.argv[0]));
  rw_petsc.argc = 1;
  for (int i = 1; i < argc; i++) {
    if (!is_key_token(argv[i])) continue;
    const char *name = strip_dashes(argv[i]);
    int known = 0; /* an app key with a PETSc name (say -info) belongs to the app */
    for (int k = 0; k < nkeys && !known; k++)
      known = streq_ci(keys[k].name, name);
    if (known || !is_petsc_name(name) || is_deck_handled_name(name)) continue;
    RW_TRY(dup_cstr(argv[i], &rw_petsc.argv[n++]));
    rw_petsc.argc = n;
    if (i + 1 < argc && !is_key_token(argv[i + 1])) {
      RW_TRY(dup_cstr(argv[++i], &rw_petsc.argv[n++]));
      rw_petsc.argc = n;
    }
  }
  PETSC_COMM_WORLD = comm;
  PetscErrorCode perr = PetscInitialize(&rw_petsc.argc, &rw_petsc.argv, NULL, NULL);
  RW_CHECK_GOTO(!perr, RW_ERR_PETSC,
                "PetscInitialize failed (PETSc error %d); check the PETSc options on the "
                "command line",
                (int)perr);
  rw_petsc.refs = 1;
  *owned = 1;
  return 0;
cleanup:
  petsc_args_free();
  return ierr;
}

static int petsc_stop(void)
{
  if (rw_petsc.refs <= 0 || --rw_petsc.refs > 0) return 0;
  PetscErrorCode perr = PetscFinalize();
  rw_petsc.finalized = 1;
  petsc_args_free();
  RW_CHECK(!perr, RW_ERR_PETSC, "PetscFinalize failed (PETSc error %d)", (int)perr);
  return 0;
}

/* A PETSc error handler that records the first message instead of printing a traceback, so
 * that a user's mistake reaches the user as a Rewind message naming the file. */
static char rw_petsc_msg[512];

static PetscErrorCode capture_handler(MPI_Comm comm, int line, const char *func, const char *file,
                                      PetscErrorCode n, PetscErrorType p, const char *mess,
                                      void *ctx)
{
  (void)comm, (void)line, (void)func, (void)file, (void)p, (void)ctx;
  if (!rw_petsc_msg[0] && mess) {
    char t[sizeof rw_petsc_msg];
    trimmed(mess, t, sizeof t);
    if (t[0]) snprintf(rw_petsc_msg, sizeof rw_petsc_msg, "%s", t);
  }
  return n;
}

/* ---------------------------------------------------------------------------------------- */
/* The deck object                                                                          */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
  char *name;  /* as spelt (without dashes) */
  char *value; /* raw value; NULL when given as a flag without a value */
  int src;     /* index into sources */
} deck_entry;

typedef struct {
  const char *text; /* effective raw text (entry value or table default); NULL: flag */
  int src;          /* source index, SRC_TABLE or SRC_UNSET */
  int valid;        /* parsed without problems */
  double real;
  long integer;
  int boolean;
  size_t size;
  int choice;    /* ENUM: index into choices */
  double *array; /* REAL_ARRAY */
  int n;
} deck_value;

struct rw_deck_s {
  MPI_Comm comm;
  char *app;
  rw_deck_key *keys;
  deck_value *vals;
  int nkeys;
  deck_entry *entries;
  int nentries, centries;
  char **sources; /* "default deck", "command line", "deck file 'path'"... */
  int nsources, csources;
  char *path;   /* the deck file ("" when none) */
  char **files; /* every deck file read (argv[1], -options_file ones), in reading order */
  int nfiles, cfiles;
  int help;
  int owns_petsc;
  strbuf problems;
  int nproblems;
};

static int deck_problem(rw_deck d, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Records one problem with the input (one line of the final message). */
static int deck_problem(rw_deck d, const char *fmt, ...)
{
  d->nproblems++;
  if (d->nproblems > RW_DECK_MAX_SHOWN) return 0;
  RW_CALL(sb_printf(&d->problems, "\n  - "));
  va_list ap;
  va_start(ap, fmt);
  int ierr = sb_vprintf(&d->problems, fmt, ap);
  va_end(ap);
  return ierr;
}

static const char *src_name(rw_deck d, int src)
{
  if (src == SRC_UNSET) return "not set";
  if (src == SRC_TABLE) return "default";
  if (src >= 0 && src < d->nsources) return d->sources[src];
  return "?";
}

/* Appends a copy of text to the growing list (*list, *n entries, room for *cap). */
static int push_str(char ***list, int *n, int *cap, const char *text, const char *what)
{
  if (*n == *cap) {
    int c = *cap ? 2 * *cap : 8;
    char **s = NULL;
    RW_CALL(rw_calloc((size_t)c, sizeof *s, what, &s));
    if (*n) memcpy(s, *list, (size_t)*n * sizeof *s);
    rw_free(list);
    *list = s;
    *cap = c;
  }
  RW_CALL(dup_cstr(text, &(*list)[*n]));
  (*n)++;
  return 0;
}

static int add_source(rw_deck d, const char *text, int *src)
{
  RW_CALL(push_str(&d->sources, &d->nsources, &d->csources, text, "deck sources"));
  *src = d->nsources - 1;
  return 0;
}

static int find_key(rw_deck d, const char *name)
{
  for (int k = 0; k < d->nkeys; k++)
    if (streq_ci(d->keys[k].name, name)) return k;
  return -1;
}

static int find_entry(rw_deck d, const char *name)
{
  for (int i = 0; i < d->nentries; i++)
    if (streq_ci(d->entries[i].name, name)) return i;
  return -1;
}

/* Sets name = value from source src; a later stage replaces an earlier one. */
static int add_entry(rw_deck d, const char *name, const char *value, int src)
{
  char *v = NULL;
  if (value) RW_CALL(dup_cstr(value, &v));
  int i = find_entry(d, name);
  if (i >= 0) {
    rw_free(&d->entries[i].value);
    d->entries[i].value = v;
    d->entries[i].src = src;
    return 0;
  }
  if (d->nentries == d->centries) {
    int c = d->centries ? 2 * d->centries : 32;
    deck_entry *e = NULL;
    int ierr = rw_calloc((size_t)c, sizeof *e, "deck entries", &e);
    if (ierr) {
      rw_free(&v);
      return rw_error_push(ierr, __func__, __FILE__, __LINE__);
    }
    if (d->nentries) memcpy(e, d->entries, (size_t)d->nentries * sizeof *e);
    rw_free(&d->entries);
    d->entries = e;
    d->centries = c;
  }
  deck_entry *e = &d->entries[d->nentries];
  int ierr = dup_cstr(name, &e->name);
  if (ierr) {
    rw_free(&v);
    return rw_error_push(ierr, __func__, __FILE__, __LINE__);
  }
  e->value = v;
  e->src = src;
  d->nentries++;
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Stages                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/* Reads a whole file on rank 0 of comm and broadcasts it. On success *text holds it (free
 * with rw_free; a NUL is appended) and *nbytes its length in bytes, which is more than
 * strlen(*text) when the file holds a NUL byte; otherwise *text is NULL and *err_no is the
 * errno from rank 0. Collective. */
static int read_file_bcast(MPI_Comm comm, const char *path, char **text, size_t *nbytes,
                           int *err_no)
{
  int rank = 0;
  long long hdr[2] = {0, 0}; /* errno, length */
  char *buf = NULL;
  *text = NULL;
  *nbytes = 0;
  *err_no = 0;
  RW_CALL_MPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) {
    errno = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
      hdr[0] = errno ? errno : ENOENT;
    } else {
      size_t cap = 4096, len = 0;
      if (rw_calloc(cap + 1, 1, "deck file text", &buf)) hdr[0] = ENOMEM;
      while (!hdr[0]) {
        if (len == cap) {
          if ((long)cap >= RW_DECK_MAX_FILE) {
            hdr[0] = EFBIG;
            break;
          }
          char *nb = NULL;
          if (rw_calloc(2 * cap + 1, 1, "deck file text", &nb)) {
            hdr[0] = ENOMEM;
            break;
          }
          memcpy(nb, buf, len);
          rw_free(&buf);
          buf = nb;
          cap *= 2;
        }
        errno = 0;
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
          if (ferror(f)) hdr[0] = errno ? errno : EIO;
          break;
        }
      }
      fclose(f);
      hdr[1] = (long long)len;
    }
    if (hdr[0]) rw_free(&buf);
    if (hdr[0] == ENOMEM) rw_error_clear(); /* reported below as the file's errno message */
  }
  RW_CALL_MPI(MPI_Bcast(hdr, 2, MPI_LONG_LONG, 0, comm));
  if (hdr[0]) {
    *err_no = (int)hdr[0];
    return 0;
  }
  if (rank != 0) RW_CALL(rw_calloc((size_t)hdr[1] + 1, 1, "deck file text", &buf));
  if (hdr[1] > 0) {
    int ierr = MPI_Bcast(buf, (int)hdr[1], MPI_CHAR, 0, comm);
    if (ierr != MPI_SUCCESS) {
      rw_free(&buf);
      return rw_error_mpi(ierr, "MPI_Bcast(deck file)", __func__, __FILE__, __LINE__);
    }
  }
  buf[hdr[1]] = '\0';
  *text = buf;
  *nbytes = (size_t)hdr[1];
  return 0;
}

/* A problem for a deck file that holds a NUL byte: it is not text (PETSc's readers and the
 * stages read up to the first NUL and would drop the rest silently). Names the offset and
 * line of the first NUL; a UTF-16 file (which has NULs in every ASCII character) gets a hint. */
static int nul_problem(rw_deck d, const char *path, const char *text, size_t len)
{
  size_t at = strlen(text);
  int line = 1;
  for (size_t i = 0; i < at; i++)
    line += text[i] == '\n';
  const unsigned char *u = (const unsigned char *)text;
  int utf16 = len >= 2 && ((u[0] == 0xff && u[1] == 0xfe) || (u[0] == 0xfe && u[1] == 0xff));
  return deck_problem(d,
                      "deck file '%s' holds a NUL byte at offset %zu (line %d), so it is not a "
                      "text file; a deck is ASCII or UTF-8 text%s",
                      path, at, line,
                      utf16 ? " (this file starts with a UTF-16 byte-order mark: save it as UTF-8, "
                              "e.g. iconv -f UTF-16 -t UTF-8)"
                      : at <= 1 ? " (if it is UTF-16 text, save it as UTF-8)"
                                : "");
}

/* Line (1-based) of the first tab used for indentation, 0 when none: YAML forbids them and
 * PETSc's YAML error says nothing about where the problem is. */
static int first_tab_indent(const char *text)
{
  int line = 1, start = 1;
  for (const char *p = text; *p; p++) {
    if (*p == '\n') {
      line++;
      start = 1;
    } else if (start && *p == '\t') {
      return line;
    } else if (*p != ' ') {
      start = 0;
    }
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Keys set twice in one file                                                               */
/* ---------------------------------------------------------------------------------------- */

/* PETSc's YAML reader and its options database let a later value of a key replace an earlier
 * one silently, and neither knows line numbers. So each file's keys are listed again here,
 * with the line that sets them, and a key set twice in one file (or one YAML text) is a
 * problem naming both lines. Keys are compared as the options database compares them: after
 * flattening, without leading dashes, ignoring case. */

/* One key seen in a file: its name as the options database gets it and where it is set. */
typedef struct {
  char *name;
  int line;
  int nested; /* set inside a nested map (its name joins keys with '_') */
} seen_key;

typedef struct {
  seen_key *k;
  int n, cap;
} seen_list;

static void seen_free(seen_list *l)
{
  for (int i = 0; i < l->n; i++)
    rw_free(&l->k[i].name);
  rw_free(&l->k);
  l->n = l->cap = 0;
}

/* Records `name` set on `line`; *prev is the earlier entry of the same key, or NULL. */
static int seen_add(seen_list *l, const char *name, int line, int nested, const seen_key **prev)
{
  *prev = NULL;
  for (int i = 0; i < l->n; i++)
    if (streq_ci(l->k[i].name, name)) {
      *prev = &l->k[i];
      return 0;
    }
  if (l->n == l->cap) {
    int c = l->cap ? 2 * l->cap : 32;
    seen_key *k = NULL;
    RW_CALL(rw_calloc((size_t)c, sizeof *k, "deck key lines", &k));
    if (l->n) memcpy(k, l->k, (size_t)l->n * sizeof *k);
    rw_free(&l->k);
    l->k = k;
    l->cap = c;
  }
  RW_CALL(dup_cstr(name, &l->k[l->n].name));
  l->k[l->n].line = line;
  l->k[l->n].nested = nested;
  l->n++;
  return 0;
}

#define RW_YAML_NAME  512 /* PETSc's longest option name */
#define RW_YAML_DEPTH 64  /* nested maps followed; deeper ones are not checked */

/* The YAML text is loaded here a first time with libyaml (the parser PETSc's reader uses), for
 * what PETSc's reader does not say: where a syntax error is (its message is "YAML parser
 * loading error", without a line), and which key is set twice. The documents' maps are walked
 * as PETSc flattens them (src/sys/objects/optionsyaml.c, PetscParseLayerYAML): a nested map's
 * keys are prefixed with "key_", a merge key "<<" adds no prefix, "$$" keys are skipped with
 * all they hold, a sequence's maps are prefixed with "key_". A map reached through an alias
 * (a merge of an anchor defined earlier: defaults that later keys may override) is not
 * walked again. */
typedef struct {
  rw_deck d;
  const char *what; /* the text in messages: "deck file 'x.yaml'" */
  seen_list seen;
  yaml_document_t *doc;
  int bad; /* a structure PETSc's reader refuses was found */
} yaml_walk;

/* Records the key prefix + key set on `line`, and a problem if it is a repeat. */
static int ywalk_key(yaml_walk *w, const char *prefix, const char *key, int line)
{
  char name[RW_YAML_NAME + 2];
  const seen_key *prev = NULL;
  snprintf(name, sizeof name, "-%s%s", prefix, key);
  const char *n = strip_dashes(name);
  if (!*n) return 0;
  RW_CALL(seen_add(&w->seen, n, line, prefix[0] != '\0', &prev));
  if (!prev) return 0;
  return deck_problem(w->d,
                      "%s sets key '%s' twice: on line %d and again on line %d%s. Set each key "
                      "once.",
                      w->what, n, prev->line, line,
                      prev->nested || prefix[0]
                          ? " (keys of a nested map join with '_', so both lines set this key)"
                          : "");
}

/* An alias's node is its anchor's, defined before the key that refers to it. */
static int ywalk_alias(const yaml_node_t *key, const yaml_node_t *val)
{
  return val->start_mark.index < key->end_mark.index;
}

static const char *ywalk_kind(yaml_node_type_t t)
{
  return t == YAML_MAPPING_NODE ? "a map" : t == YAML_SEQUENCE_NODE ? "a list" : "a value";
}

static int ywalk_map(yaml_walk *w, yaml_node_t *map, const char *prefix, int depth)
{
  if (map->type == YAML_SCALAR_NODE && !map->data.scalar.value[0]) return 0; /* empty */
  if (map->type != YAML_MAPPING_NODE) {
    w->bad = 1;
    return deck_problem(w->d, "%s line %lu: expected a map of `key: value` lines here, found %s",
                        w->what, (unsigned long)map->start_mark.line + 1, ywalk_kind(map->type));
  }
  if (depth >= RW_YAML_DEPTH) return 0;
  for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top;
       pr++) {
    yaml_node_t *k = yaml_document_get_node(w->doc, pr->key);
    yaml_node_t *v = yaml_document_get_node(w->doc, pr->value);
    if (!k || !v) continue;
    const int line = (int)k->start_mark.line + 1;
    if (k->type != YAML_SCALAR_NODE) {
      w->bad = 1;
      RW_CALL(deck_problem(w->d, "%s line %d: a key must be a plain name, found %s", w->what, line,
                           ywalk_kind(k->type)));
      continue;
    }
    const char *key = (const char *)k->data.scalar.value;
    char child[RW_YAML_NAME];
    snprintf(child, sizeof child, "%s%s_", prefix, key);
    if (!strcmp(key, "<<")) { /* merge: its maps' keys without a prefix */
      if (ywalk_alias(k, v)) continue;
      if (v->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
             it++) {
          yaml_node_t *m = yaml_document_get_node(w->doc, *it);
          if (m && !ywalk_alias(k, m)) RW_CALL(ywalk_map(w, m, prefix, depth + 1));
        }
      } else {
        RW_CALL(ywalk_map(w, v, prefix, depth + 1));
      }
      continue;
    }
    if (key[0] == '$' && key[1] == '$') continue; /* PETSc's dummy keys (anchors, !include) */
    if (v->type == YAML_MAPPING_NODE) {
      if (!ywalk_alias(k, v)) RW_CALL(ywalk_map(w, v, child, depth + 1));
      continue;
    }
    RW_CALL(ywalk_key(w, prefix, key, line)); /* a value, or a list joined with ',' */
    if (v->type == YAML_SEQUENCE_NODE && !ywalk_alias(k, v))
      for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
           it++) {
        yaml_node_t *m = yaml_document_get_node(w->doc, *it);
        if (!m || m->type == YAML_SCALAR_NODE || ywalk_alias(k, m)) continue;
        const long np = m->type == YAML_MAPPING_NODE
                            ? (long)(m->data.mapping.pairs.top - m->data.mapping.pairs.start)
                            : -1;
        if (np > 1 || np < 0) { /* PETSc takes a list of values, or of one-key maps */
          w->bad = 1;
          RW_CALL(deck_problem(w->d,
                               "%s line %lu: an item of list '%s' is %s; a list holds values "
                               "(or maps of one `key: value` each)",
                               w->what, (unsigned long)m->start_mark.line + 1, key,
                               np < 0 ? "a list" : "a map of several keys"));
          continue;
        }
        RW_CALL(ywalk_map(w, m, child, depth + 1));
      }
  }
  return 0;
}

/* Loads the YAML text with libyaml: a syntax error is a problem naming its line and column,
 * and so is every key the text sets twice and every structure PETSc's reader refuses (*bad is
 * set for those and for a syntax error: PETSc's reader is then not run). Problems are
 * collected (deck_problem); a nonzero return is a failure of its own (memory). */
static int yaml_check(rw_deck d, const char *text, const char *what, int *bad)
{
  yaml_parser_t parser;
  yaml_walk w;
  int ierr = 0;
  *bad = 0;
  memset(&w, 0, sizeof w);
  w.d = d;
  w.what = what;
  if (!yaml_parser_initialize(&parser))
    return RW_ERROR(RW_ERR_MEM, "the YAML parser could not start (out of memory)");
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
  for (;;) {
    yaml_document_t doc;
    if (!yaml_parser_load(&parser, &doc) && parser.error == YAML_MEMORY_ERROR) {
      ierr = RW_ERROR(RW_ERR_MEM, "out of memory while reading %s as YAML", what);
      break;
    }
    if (parser.error != YAML_NO_ERROR) {
      int tab = first_tab_indent(text);
      char hint[96] = "", ctx[160] = "";
      *bad = 1;
      if (tab)
        snprintf(hint, sizeof hint, " Line %d is indented with a tab; YAML needs spaces.", tab);
      if (parser.context)
        snprintf(ctx, sizeof ctx, " (%s, from line %lu column %lu)", parser.context,
                 (unsigned long)parser.context_mark.line + 1,
                 (unsigned long)parser.context_mark.column + 1);
      ierr = deck_problem(d,
                          "%s is not a valid deck: YAML error at line %lu, column %lu: %s%s.%s "
                          "A deck is a YAML map of `key: value` lines (nested maps allowed); "
                          "check the indentation, the ':' after each key and the quotes.",
                          what, (unsigned long)parser.problem_mark.line + 1,
                          (unsigned long)parser.problem_mark.column + 1,
                          parser.problem ? parser.problem : "malformed text", ctx, hint);
      break;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root) {
      w.doc = &doc;
      ierr = ywalk_map(&w, root, "", 0);
      *bad |= w.bad;
    }
    yaml_document_delete(&doc);
    if (!root || ierr) break;
  }
  yaml_parser_delete(&parser);
  seen_free(&w.seen);
  return ierr;
}

/* Parses YAML text with PETSc's reader and merges its options as from source src. `what`
 * names the text in messages ("deck file 'x.yaml'"). libyaml reads it first (yaml_check), for
 * the line of a syntax error and the keys set twice. */
static int stage_yaml(rw_deck d, const char *text, int src, const char *what)
{
  PetscOptions tmp = NULL;
  PetscInt n = 0;
  char **names = NULL, **values = NULL;
  int ierr = 0, bad = 0;
  RW_CALL(yaml_check(d, text, what, &bad));
  if (bad) return 0; /* the problem is recorded */
  if (PetscOptionsCreate(&tmp)) return RW_ERROR(RW_ERR_PETSC, "PetscOptionsCreate failed");
  rw_petsc_msg[0] = '\0';
  PetscPushErrorHandler(capture_handler, NULL);
  PetscErrorCode perr = PetscOptionsInsertStringYAML(tmp, text);
  PetscPopErrorHandler();
  if (perr) {
    ierr = deck_problem(d,
                        "%s is not a valid deck: %s. A deck is a YAML map of `key: value` lines "
                        "(nested maps allowed); check the indentation, the ':' after each key and "
                        "the quotes.",
                        what, rw_petsc_msg[0] ? rw_petsc_msg : "YAML error");
    goto cleanup;
  }
  if (PetscOptionsLeftGet(tmp, &n, &names, &values)) {
    ierr = RW_ERROR(RW_ERR_PETSC, "PetscOptionsLeftGet failed on %s", what);
    goto cleanup;
  }
  for (PetscInt i = 0; i < n; i++) {
    const char *name = strip_dashes(names[i]);
    if (is_help_name(name)) continue; /* help is a command-line request only */
    RW_TRY(add_entry(d, name, values[i], src));
  }
cleanup:
  if (names || values) PetscOptionsLeftRestore(tmp, &n, &names, &values);
  PetscOptionsDestroy(&tmp);
  return ierr;
}

static int stage_file(rw_deck d, const char *path, int force_yaml, int depth);

/* Plain PETSc options text: "-key value" per line, '#' to the end of a line is a comment.
 * Unlike PETSc, a value may contain spaces ("-checkpoint_ram 100 kB") and may be quoted.
 * A key given on two lines is a problem naming both (seen: the file's keys so far). */
static int stage_plain(rw_deck d, char *text, int src, const char *path, int depth, seen_list *seen)
{
  int line = 0;
  char *p = text;
  while (p && *p) {
    char *eol = strchr(p, '\n');
    if (eol) *eol = '\0';
    line++;
    char *hash = strchr(p, '#');
    if (hash) *hash = '\0';
    char *s = p;
    p = eol ? eol + 1 : NULL;
    while (is_space((unsigned char)*s))
      s++;
    if (!*s) continue;
    char *first = s;
    while (*s && !is_space((unsigned char)*s))
      s++;
    if (*s) *s++ = '\0';
    while (is_space((unsigned char)*s))
      s++;
    char *rest = s;
    size_t rl = strlen(rest);
    while (rl && is_space((unsigned char)rest[rl - 1]))
      rest[--rl] = '\0';
    if (!is_key_token(first)) {
      if (streq_ci(first, "alias"))
        RW_CALL(deck_problem(d, "deck file '%s' line %d: aliases are not supported in a deck", path,
                             line));
      else
        RW_CALL(deck_problem(d,
                             "deck file '%s' line %d: expected '-key value', found '%.100s' "
                             "(a YAML deck needs the extension .yaml or .yml)",
                             path, line, first));
      continue;
    }
    if (rl) {
      /* Any later token that is a key: two options on one line, as PETSc refuses. */
      char tok[128];
      const char *q = rest;
      int twokeys = 0;
      while (*q && !twokeys) {
        size_t k = 0;
        while (*q && !is_space((unsigned char)*q)) {
          if (k + 1 < sizeof tok) tok[k++] = *q;
          q++;
        }
        tok[k] = '\0';
        while (is_space((unsigned char)*q))
          q++;
        twokeys = is_key_token(tok);
      }
      if (twokeys) {
        RW_CALL(deck_problem(d, "deck file '%s' line %d: one option per line, found '%s %.100s'",
                             path, line, first, rest));
        continue;
      }
      if (rl >= 2 && (rest[0] == '"' || rest[0] == '\'') && rest[rl - 1] == rest[0]) {
        rest[rl - 1] = '\0';
        rest++;
        rl -= 2;
      }
    }
    const char *name = strip_dashes(first);
    const char *value = rl ? rest : NULL;
    if (streq_ci(name, "options_file") || streq_ci(name, "options_file_yaml")) {
      if (!value) {
        RW_CALL(deck_problem(d, "deck file '%s' line %d: %s needs a file name", path, line, first));
      } else if (depth >= RW_DECK_MAX_DEPTH) {
        RW_CALL(
            deck_problem(d, "deck file '%s' line %d: options files nested too deeply", path, line));
      } else {
        RW_CALL(stage_file(d, value, streq_ci(name, "options_file_yaml"), depth + 1));
      }
      continue;
    }
    if (is_help_name(name)) continue; /* help is a command-line request only */
    const seen_key *prev = NULL;
    RW_CALL(seen_add(seen, name, line, 0, &prev));
    if (prev) {
      RW_CALL(deck_problem(d,
                           "deck file '%s' sets key '%s' twice: on line %d and again on line "
                           "%d. Set each key once.",
                           path, name, prev->line, line));
      continue;
    }
    RW_CALL(add_entry(d, name, value, src));
  }
  return 0;
}

static int ends_with_ci(const char *s, const char *suffix)
{
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && streq_ci(s + n - m, suffix);
}

/* Reads a deck file (collective) and merges it: YAML for .yaml/.yml/.json (or force_yaml),
 * a plain options file otherwise. A missing or unreadable file is a problem of the deck. */
static int stage_file(rw_deck d, const char *path, int force_yaml, int depth)
{
  char *text = NULL, *what = NULL;
  int err_no = 0, src = 0, ierr = 0;
  size_t len = 0;
  strbuf label = {0};
  seen_list seen = {0};
  if (!d->path) RW_CALL(dup_cstr(path, &d->path));
  RW_CALL(push_str(&d->files, &d->nfiles, &d->cfiles, path, "deck files"));
  RW_CALL(read_file_bcast(d->comm, path, &text, &len, &err_no));
  if (!text) {
    return deck_problem(d, "deck file '%s' cannot be read: %s", path,
                        err_no == EFBIG ? "file too large for a deck" : strerror(err_no));
  }
  if (strlen(text) != len) {
    ierr = nul_problem(d, path, text, len);
    rw_free(&text);
    return ierr;
  }
  RW_TRY(sb_printf(&label, "deck file '%s'", path));
  what = label.s;
  RW_TRY(add_source(d, what, &src));
  if (force_yaml || ends_with_ci(path, ".yaml") || ends_with_ci(path, ".yml") ||
      ends_with_ci(path, ".json"))
    RW_TRY(stage_yaml(d, text, src, what));
  else
    RW_TRY(stage_plain(d, text, src, path, depth, &seen));
cleanup:
  seen_free(&seen);
  rw_free(&text);
  sb_free(&label);
  return ierr;
}

/* The command line after the deck file: "-key value" pairs, PETSc's rules for what is a
 * value, processed from left to right. */
static int stage_cmdline(rw_deck d, int first, int argc, char **argv)
{
  for (int i = first; i < argc; i++) {
    const char *tok = argv[i];
    if (!tok) break;
    if (!is_key_token(tok)) {
      RW_CALL(deck_problem(d,
                           "unexpected argument '%.100s' on the command line (the deck file "
                           "must be the first argument; options are -key value)",
                           tok));
      continue;
    }
    const char *name = strip_dashes(tok);
    const char *value =
        (i + 1 < argc && argv[i + 1] && !is_key_token(argv[i + 1])) ? argv[i + 1] : NULL;
    if (is_help_name(name)) {
      /* Only "intro" or a boolean word is taken as the value of -help, so that
       * "app -help deck.yaml" still shows the deck's problems. */
      int yes = 1;
      if (value) {
        if (streq_ci(value, "false") || streq_ci(value, "no") || streq_ci(value, "off") ||
            streq_ci(value, "0"))
          yes = 0, i++;
        else if (streq_ci(value, "true") || streq_ci(value, "yes") || streq_ci(value, "on") ||
                 streq_ci(value, "1") || streq_ci(value, "intro"))
          i++;
      }
      if (yes) d->help = 1;
      continue;
    }
    if (value) i++;
    if (streq_ci(name, "options_file") || streq_ci(name, "options_file_yaml")) {
      if (!value)
        RW_CALL(deck_problem(d, "%s on the command line needs a file name", tok));
      else
        RW_CALL(stage_file(d, value, streq_ci(name, "options_file_yaml"), 1));
      continue;
    }
    if (streq_ci(name, "options_string_yaml")) {
      if (!value)
        RW_CALL(deck_problem(d, "%s on the command line needs a YAML text", tok));
      else
        RW_CALL(stage_yaml(d, value, SRC_CMDLINE, "the YAML string on the command line"));
      continue;
    }
    RW_CALL(add_entry(d, name, value, SRC_CMDLINE));
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Values                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/* The parsers below refuse text longer than their buffers (validate_key reports such values
 * first, naming the limit), so that a value is never read from a truncated copy. 0: parsed;
 * 1: not a number of the type; 2 (parse_real, parse_long): a number, but beyond the type's
 * range (range_word says which). */
static int parse_real(const char *s, double *v)
{
  char t[RW_DECK_MAX_VALUE + 1], *end = NULL;
  size_t n = 0;
  trim_span(s, &n);
  if (n >= sizeof t) return 1;
  trimmed(s, t, sizeof t);
  if (!t[0]) return 1;
  errno = 0;
  double x = strtod(t, &end);
  if (*end || isnan(x)) return 1;
  if (errno == ERANGE && fabs(x) > 1.0) return 2; /* overflow; underflow to tiny is fine */
  *v = x;
  return 0;
}

static const char *range_word(int e, int integer)
{
  if (e == 2)
    return integer ? "is beyond the range of an integer (|n| < 9.2e18)"
                   : "is beyond the range of a real number (|x| <= 1.8e308)";
  return integer ? "is not an integer" : "is not a real number";
}

static int parse_long(const char *s, long *v)
{
  char t[RW_DECK_MAX_VALUE + 1], *end = NULL;
  size_t n = 0;
  trim_span(s, &n);
  if (n >= sizeof t) return 1;
  trimmed(s, t, sizeof t);
  if (!t[0]) return 1;
  errno = 0;
  long x = strtol(t, &end, 10);
  if (!*end && errno != ERANGE) {
    *v = x;
    return 0;
  }
  if (!*end) return 2; /* digits alone: beyond a long */
  double r = 0.0;      /* 1e6, 2.5e3: integers written as reals */
  const int e = parse_real(t, &r);
  if (e) return e;
  if (r != floor(r)) return 1;
  if (fabs(r) >= 9.2e18) return 2;
  *v = (long)r;
  return 0;
}

static int parse_bool(const char *s, int *v)
{
  char t[16];
  size_t n = 0;
  if (!s) { /* a flag without a value, as in PETSc */
    *v = 1;
    return 0;
  }
  trim_span(s, &n);
  if (n >= sizeof t) return 1; /* longer than any of the words */
  trimmed(s, t, sizeof t);
  static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no", "off",
                                                                              "0"};
  for (int i = 0; i < 4; i++) {
    if (streq_ci(t, yes[i])) return *v = 1, 0;
    if (streq_ci(t, no[i])) return *v = 0, 0;
  }
  return 1;
}

/* The choice with index i of a comma-separated list, trimmed, into buf. */
static int choice_at(const char *choices, int i, char *buf, size_t len)
{
  const char *p = choices ? choices : "";
  for (int k = 0; k < i; k++) {
    p = strchr(p, ',');
    if (!p) return 1;
    p++;
  }
  const char *e = strchr(p, ',');
  size_t n = e ? (size_t)(e - p) : strlen(p);
  char t[256];
  if (n >= sizeof t) n = sizeof t - 1;
  memcpy(t, p, n);
  t[n] = '\0';
  trimmed(t, buf, len);
  return 0;
}

static int count_choices(const char *choices)
{
  if (!choices || !*choices) return 0;
  int n = 1;
  for (const char *p = choices; *p; p++)
    n += *p == ',';
  return n;
}

/* The unit table of rw_parse_size (case-insensitive). */
static const struct {
  const char *name;
  size_t mult;
} rw_size_units[] = {
    {"", 1},
    {"b", 1},
    {"byte", 1},
    {"bytes", 1},
    {"kb", 1000},
    {"mb", 1000000},
    {"gb", 1000000000},
    {"tb", 1000000000000ULL},
    {"kib", 1024},
    {"mib", 1024 * 1024},
    {"gib", 1024ULL * 1024 * 1024},
    {"tib", 1024ULL * 1024 * 1024 * 1024},
};

/* Parses a size; on failure writes why into `why` (without the text itself) and returns 1. */
static int size_parse(const char *text, size_t *bytes, char *why, size_t whylen)
{
  const char *p = text ? text : "";
  while (is_space((unsigned char)*p))
    p++;
  if (!*p) {
    snprintf(why, whylen, "empty size; give a number of bytes with an optional unit, e.g. 512MiB");
    return 1;
  }
  if (*p == '-') {
    snprintf(why, whylen, "a size cannot be negative");
    return 1;
  }
  const char *num = p;
  int digits = 0, frac = 0;
  while (isdigit((unsigned char)*p))
    p++, digits++;
  if (*p == '.') {
    frac = 1;
    p++;
    while (isdigit((unsigned char)*p))
      p++, digits++;
  }
  if (!digits) {
    snprintf(why, whylen,
             "not a size; give a number of bytes with an optional unit, e.g. 512MiB, 8GiB, "
             "1.5GB, 4096");
    return 1;
  }
  if ((*p == 'e' || *p == 'E') &&
      (isdigit((unsigned char)p[1]) ||
       ((p[1] == '+' || p[1] == '-') && isdigit((unsigned char)p[2])))) {
    frac = 1;
    p += 2;
    while (isdigit((unsigned char)*p))
      p++;
  }
  size_t numlen = (size_t)(p - num);
  while (is_space((unsigned char)*p))
    p++;
  const char *unit = p;
  size_t ulen = strlen(unit);
  while (ulen && is_space((unsigned char)unit[ulen - 1]))
    ulen--;
  size_t mult = 0;
  for (size_t i = 0; i < sizeof rw_size_units / sizeof rw_size_units[0]; i++)
    if (strneq_ci(unit, ulen, rw_size_units[i].name)) mult = rw_size_units[i].mult;
  if (!mult) {
    if (ulen == 1 && strchr("kKmMgGtT", unit[0])) {
      char U = (char)toupper((unsigned char)unit[0]);
      char u = U == 'K' ? 'k' : U;
      snprintf(why, whylen,
               "unit '%c' is ambiguous; use %cB (powers of 1000) or %ciB (powers of 1024)", unit[0],
               u, U);
    } else {
      snprintf(why, whylen, "unknown unit '%.*s'; use B, kB, MB, GB, TB, KiB, MiB, GiB, TiB",
               (int)(ulen > 40 ? 40 : ulen), unit);
    }
    return 1;
  }
  if (numlen > 64) {
    snprintf(why, whylen, "too large: more than %zu bytes", (size_t)SIZE_MAX);
    return 1;
  }
  char nb[72];
  memcpy(nb, num, numlen);
  nb[numlen] = '\0';
  if (!frac) {
    size_t v = 0;
    for (const char *q = nb; *q; q++) {
      size_t dgt = (size_t)(*q - '0');
      if (v > (SIZE_MAX - dgt) / 10) {
        snprintf(why, whylen, "too large: more than %zu bytes", (size_t)SIZE_MAX);
        return 1;
      }
      v = 10 * v + dgt;
    }
    if (v && mult > SIZE_MAX / v) {
      snprintf(why, whylen, "too large: more than %zu bytes", (size_t)SIZE_MAX);
      return 1;
    }
    *bytes = v * mult;
    return 0;
  }
  double x = strtod(nb, NULL) * (double)mult;
  const double limit = 18446744073709551616.0; /* 2^64 */
  if (!(x < limit) || floor(x + 0.5) >= limit || floor(x + 0.5) > (double)SIZE_MAX) {
    snprintf(why, whylen, "too large: more than %zu bytes", (size_t)SIZE_MAX);
    return 1;
  }
  if (mult == 1 && x != floor(x)) {
    snprintf(why, whylen, "not a whole number of bytes");
    return 1;
  }
  *bytes = (size_t)floor(x + 0.5);
  return 0;
}

/* Range text for messages and help: "> 0", "in [0, 1]", ">= 1", "" for no range. */
static void fmt_num(const rw_deck_key *k, double x, char *buf, size_t len)
{
  if (k->type == RW_KEY_SIZE && x >= 0 && x == floor(x)) {
    static const char *const bu[] = {"TiB", "GiB", "MiB", "KiB"};
    static const double bm[] = {1099511627776.0, 1073741824.0, 1048576.0, 1024.0};
    for (int i = 0; i < 4; i++)
      if (x >= bm[i] && fmod(x, bm[i]) == 0.0) {
        snprintf(buf, len, "%.0f%s", x / bm[i], bu[i]);
        return;
      }
    snprintf(buf, len, "%.0f", x);
    return;
  }
  snprintf(buf, len, "%g", x);
}

static int has_range(const rw_deck_key *k)
{
  return !(k->min == 0.0 && k->max == 0.0) || k->min_exclusive;
}

/* The allowed range as shown in help and messages. A bound at or beyond +-1e300 is not
 * shown; when neither bound is shown but one is finite (the common -1e300, 1e300), the text
 * is "finite", since in_range still refuses inf and values beyond the bound. */
static void range_text(const rw_deck_key *k, char *buf, size_t len)
{
  char a[48], b[48];
  buf[0] = '\0';
  if (!has_range(k)) return;
  if (k->min == 0.0 && k->max == 0.0) { /* min_exclusive alone: > 0 */
    snprintf(buf, len, "> 0");
    return;
  }
  int lo = k->min > -1e300, hi = k->max < 1e300; /* +-1e300 and beyond: no bound */
  fmt_num(k, k->min, a, sizeof a);
  fmt_num(k, k->max, b, sizeof b);
  if (lo && hi)
    snprintf(buf, len, "in %c%s, %s]", k->min_exclusive ? '(' : '[', a, b);
  else if (lo)
    snprintf(buf, len, "%s %s", k->min_exclusive ? ">" : ">=", a);
  else if (hi)
    snprintf(buf, len, "<= %s", b);
  else if (isfinite(k->min) || isfinite(k->max))
    snprintf(buf, len, "finite");
}

/* What a value x that in_range refused must be, for the message: the range of range_text
 * when x is outside it, else (x is beyond a bound at or past +-1e300: inf, 1e301) the range
 * and "finite" with those bounds, e.g. "finite (|x| <= 1e+300)" or "> 0 and finite (<=
 * 1e+300)". Never empty for a refused value. */
static void range_why(const rw_deck_key *k, double x, char *buf, size_t len)
{
  char rng[128], a[48], b[48], fin[128];
  range_text(k, rng, sizeof rng);
  int lo = k->min > -1e300, hi = k->max < 1e300;
  int below = k->min_exclusive ? !(x > k->min) : !(x >= k->min);
  if ((k->min == 0.0 && k->max == 0.0) || (lo && below) || (hi && x > k->max)) {
    snprintf(buf, len, "%s", rng);
    return;
  }
  int plo = !lo && isfinite(k->min), phi = !hi && isfinite(k->max); /* the bounds at 1e300 */
  fmt_num(k, k->min, a, sizeof a);
  fmt_num(k, k->max, b, sizeof b);
  if (plo && phi && k->min == -k->max)
    snprintf(fin, sizeof fin, "finite (|x| <= %s)", b);
  else if (plo && phi)
    snprintf(fin, sizeof fin, "finite (in [%s, %s])", a, b);
  else if (phi)
    snprintf(fin, sizeof fin, "finite (<= %s)", b);
  else
    snprintf(fin, sizeof fin, "finite (%s %s)", k->min_exclusive ? ">" : ">=", a);
  if (lo || hi)
    snprintf(buf, len, "%s and %s", rng, fin);
  else
    snprintf(buf, len, "%s", fin);
}

static int in_range(const rw_deck_key *k, double x)
{
  if (!has_range(k)) return 1;
  if (k->min == 0.0 && k->max == 0.0) return x > 0.0;
  if (k->min_exclusive ? !(x > k->min) : !(x >= k->min)) return 0;
  return x <= k->max;
}

static const char *type_name(rw_key_type t)
{
  switch (t) {
  case RW_KEY_STRING:
    return "string";
  case RW_KEY_REAL:
    return "real";
  case RW_KEY_INT:
    return "integer";
  case RW_KEY_BOOL:
    return "bool";
  case RW_KEY_SIZE:
    return "size";
  case RW_KEY_ENUM:
    return "choice";
  case RW_KEY_REAL_ARRAY:
    return "reals";
  }
  return "?";
}

/* Parses and checks one key's effective value; records a problem when it is bad. */
static int validate_key(rw_deck d, int ki)
{
  const rw_deck_key *k = &d->keys[ki];
  deck_value *v = &d->vals[ki];
  const char *src = src_name(d, v->src);
  char t[RW_DECK_MAX_VALUE + 1], rng[300];
  int perr = 0;
  v->valid = 0;
  if (v->src == SRC_UNSET) return 0;
  trimmed(v->text, t, sizeof t);
  if (!v->text && k->type != RW_KEY_BOOL && k->type != RW_KEY_STRING &&
      k->type != RW_KEY_REAL_ARRAY) {
    char what[300];
    if (k->type == RW_KEY_ENUM)
      snprintf(what, sizeof what, "one of: %s", k->choices);
    else
      snprintf(what, sizeof what, "%s %s", k->type == RW_KEY_INT ? "an" : "a", type_name(k->type));
    return deck_problem(d, "%s (from %s) is given without a value; expected %s", k->name, src,
                        what);
  }
  /* Values are never truncated: one longer than the limit is refused. */
  size_t tlen = 0;
  const char *ts = trim_span(v->text, &tlen);
  if (k->type == RW_KEY_STRING && v->text && strlen(v->text) > RW_DECK_MAX_STRING)
    return deck_problem(
        d, "%s = '%.40s...' (from %s) is %zu bytes long; a string value has at most %d", k->name,
        v->text, src, strlen(v->text), RW_DECK_MAX_STRING);
  if (k->type != RW_KEY_STRING && k->type != RW_KEY_REAL_ARRAY && tlen > RW_DECK_MAX_VALUE)
    return deck_problem(
        d, "%s = '%.40s...' (from %s) is %zu bytes long; %s %s value has at most %d", k->name, ts,
        src, tlen, k->type == RW_KEY_INT ? "an" : "a", type_name(k->type), RW_DECK_MAX_VALUE);
  switch (k->type) {
  case RW_KEY_STRING:
    break;
  case RW_KEY_REAL:
    if ((perr = parse_real(v->text, &v->real)) != 0)
      return deck_problem(d, "%s = '%.100s' (from %s) %s", k->name, t, src, range_word(perr, 0));
    if (!in_range(k, v->real)) {
      range_why(k, v->real, rng, sizeof rng);
      return deck_problem(d, "%s = %.100s (from %s) must be %s", k->name, t, src, rng);
    }
    break;
  case RW_KEY_INT:
    if ((perr = parse_long(v->text, &v->integer)) != 0)
      return deck_problem(d, "%s = '%.100s' (from %s) %s", k->name, t, src, range_word(perr, 1));
    if (!in_range(k, (double)v->integer)) {
      range_why(k, (double)v->integer, rng, sizeof rng);
      return deck_problem(d, "%s = %.100s (from %s) must be %s", k->name, t, src, rng);
    }
    break;
  case RW_KEY_BOOL:
    if (parse_bool(v->text, &v->boolean))
      return deck_problem(d,
                          "%s = '%.100s' (from %s) is not a boolean; use true/false, yes/no, "
                          "on/off or 1/0",
                          k->name, t, src);
    break;
  case RW_KEY_SIZE: {
    char why[160];
    if (size_parse(v->text, &v->size, why, sizeof why))
      return deck_problem(d, "%s = '%.100s' (from %s): %s", k->name, t, src, why);
    if (!in_range(k, (double)v->size)) {
      range_why(k, (double)v->size, rng, sizeof rng);
      return deck_problem(d, "%s = %.100s (from %s) must be %s", k->name, t, src, rng);
    }
    break;
  }
  case RW_KEY_ENUM: {
    int nc = count_choices(k->choices), best = -1, bestd = 1000;
    char c[128], list[512] = "";
    for (int i = 0; i < nc; i++) {
      choice_at(k->choices, i, c, sizeof c);
      if (streq_ci(c, t)) {
        v->choice = i;
        v->valid = 1;
        return 0;
      }
      int dist = edit_distance(t, strlen(t), c);
      if (dist < bestd) bestd = dist, best = i;
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", c);
    }
    char hint[160] = "";
    if (best >= 0 && bestd <= suggest_limit(strlen(t))) {
      choice_at(k->choices, best, c, sizeof c);
      snprintf(hint, sizeof hint, "; did you mean '%s'?", c);
    }
    return deck_problem(d, "%s = '%.100s' (from %s) is not one of: %s%s", k->name, t, src, list,
                        hint);
  }
  case RW_KEY_REAL_ARRAY: {
    /* Count, then parse; YAML sequences arrive as "1,2,3", an empty one as no value. */
    int n = 0;
    const char *s = v->text ? v->text : "";
    char probe[8];
    if (trimmed(s, probe, sizeof probe)[0]) {
      n = 1;
      for (const char *p = s; *p; p++)
        n += *p == ',';
    }
    if (k->max_len > 0 && n > k->max_len)
      return deck_problem(d, "%s = '%.100s' (from %s) has %d entries; at most %d are allowed",
                          k->name, t, src, n, k->max_len);
    rw_free(&v->array);
    v->n = 0;
    if (n) RW_CALL(rw_calloc((size_t)n, sizeof(double), "deck real array", &v->array));
    const char *p = s;
    for (int i = 0; i < n; i++) {
      const char *e = strchr(p, ',');
      size_t len = e ? (size_t)(e - p) : strlen(p);
      char item[RW_DECK_MAX_VALUE + 1];
      const char *is = p; /* the entry without white space: is[0 .. len) */
      while (len && is_space((unsigned char)*is))
        is++, len--;
      while (len && is_space((unsigned char)is[len - 1]))
        len--;
      if (len > RW_DECK_MAX_VALUE)
        return deck_problem(d,
                            "%s = '%.40s...' (from %s): entry %d '%.40s...' is %zu bytes long; "
                            "an entry has at most %d",
                            k->name, t, src, i + 1, is, len, RW_DECK_MAX_VALUE);
      memcpy(item, is, len);
      item[len] = '\0';
      const int pe = parse_real(item, &v->array[i]);
      if (pe != 0)
        return deck_problem(d, "%s = '%.100s' (from %s): entry %d '%.100s' %s", k->name, t, src,
                            i + 1, item, range_word(pe, 0));
      if (!in_range(k, v->array[i])) {
        range_why(k, v->array[i], rng, sizeof rng);
        return deck_problem(d, "%s = '%.100s' (from %s): entry %d = %.100s must be %s", k->name, t,
                            src, i + 1, item, rng);
      }
      p = e ? e + 1 : p + strlen(p);
    }
    v->n = n;
    break;
  }
  default:
    return deck_problem(d, "key '%s' has an unknown type %d in the key table", k->name,
                        (int)k->type);
  }
  v->valid = 1;
  return 0;
}

/* The closest known key (or PETSc option) to a misspelt name, NULL if none is close. */
static const char *suggest(rw_deck d, const char *name)
{
  size_t n = strlen(name);
  int best = 1000;
  const char *which = NULL;
  for (int k = 0; k < d->nkeys; k++) {
    int dist = edit_distance(name, n, d->keys[k].name);
    if (dist < best) best = dist, which = d->keys[k].name;
  }
  for (int i = 0; i < RW_DECK_NPETSC; i++) {
    if (strlen(rw_deck_petsc_names[i]) < 3) continue; /* never suggest -h */
    int dist = edit_distance(name, n, rw_deck_petsc_names[i]);
    if (dist < best) best = dist, which = rw_deck_petsc_names[i];
  }
  return best <= suggest_limit(n) ? which : NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* Public API                                                                               */
/* ---------------------------------------------------------------------------------------- */

/* Checks the key table itself (programming errors, reported as RW_ERR_ARG). */
static int check_table(const rw_deck_key *keys, int nkeys)
{
  RW_CHECK(nkeys >= 0 && (keys || nkeys == 0), RW_ERR_ARG,
           "rw_deck_create: the key table is NULL or nkeys (%d) < 0", nkeys);
  for (int i = 0; i < nkeys; i++) {
    const rw_deck_key *k = &keys[i];
    RW_CHECK(k->name && isalpha((unsigned char)k->name[0]), RW_ERR_ARG,
             "rw_deck_create: key %d has no name or does not start with a letter", i);
    RW_CHECK(k->type >= RW_KEY_STRING && k->type <= RW_KEY_REAL_ARRAY, RW_ERR_ARG,
             "rw_deck_create: key '%s' has an unknown type %d", k->name, (int)k->type);
    RW_CHECK(k->type != RW_KEY_ENUM || count_choices(k->choices) > 0, RW_ERR_ARG,
             "rw_deck_create: enum key '%s' has no choices", k->name);
    for (int j = 0; j < i; j++)
      RW_CHECK(!streq_ci(keys[j].name, k->name), RW_ERR_ARG,
               "rw_deck_create: key '%s' appears twice in the key table", k->name);
  }
  return 0;
}

/* Builds the deck (see rw_deck.h for the precedence). Collective on comm: every rank must
 * pass the same arguments; files are read on rank 0 and broadcast, so every rank finds the
 * same problems and returns the same code and message.
 *   comm          communicator of the ranks that share the deck (MPI must be initialised)
 *   app           program name for messages and the usage line
 *   keys, nkeys   the key table; its strings must outlive the deck
 *   default_yaml  embedded default deck (YAML text) or NULL
 *   argc, argv    main's arguments (argv[0] is the program; may be 0/NULL)
 *   out           the deck, NULL on failure
 * With -help/--help/-h, returns 0 even when the deck has problems: they are shown by
 * rw_deck_print_help. Returns RW_ERR_DECK listing every problem of the input (unknown keys
 * with suggestions, unreadable files, bad values), RW_ERR_ARG for a bad key table or
 * arguments, RW_ERR_PETSC/RW_ERR_MPI/RW_ERR_MEM otherwise. */
int rw_deck_create(MPI_Comm comm, const char *app, const rw_deck_key *keys, int nkeys,
                   const char *default_yaml, int argc, char **argv, rw_deck *out)
{
  int ierr = 0, inited = 0, src = 0;
  rw_deck d = NULL;
  RW_CHECK(out, RW_ERR_ARG, "rw_deck_create: output pointer is NULL");
  *out = NULL;
  RW_CALL(check_table(keys, nkeys));
  RW_CALL_MPI(MPI_Initialized(&inited));
  RW_CHECK(inited, RW_ERR_ARG, "rw_deck_create: call MPI_Init before creating a deck");
  if (!app) app = (argc > 0 && argv && argv[0]) ? argv[0] : "rewind";

  RW_CALL(rw_calloc(1, sizeof *d, "deck", &d));
  d->comm = comm;
  RW_TRY(petsc_start(comm, app, keys, nkeys, argc, argv, &d->owns_petsc));
  RW_TRY(dup_cstr(app, &d->app));
  d->nkeys = nkeys;
  if (nkeys) {
    RW_TRY(rw_calloc((size_t)nkeys, sizeof *d->keys, "deck key table", &d->keys));
    memcpy(d->keys, keys, (size_t)nkeys * sizeof *keys);
    RW_TRY(rw_calloc((size_t)nkeys, sizeof *d->vals, "deck values", &d->vals));
  }
  RW_TRY(add_source(d, "default deck", &src));
  RW_TRY(add_source(d, "command line", &src));

  /* Stages, lowest precedence first. */
  if (default_yaml && *default_yaml)
    RW_TRY(stage_yaml(d, default_yaml, SRC_DEFAULT_DECK, "the default deck"));
  int first = 1;
  if (argc > 1 && argv && argv[1] && argv[1][0] != '-') {
    RW_TRY(stage_file(d, argv[1], 0, 0));
    first = 2;
  }
  if (argv) RW_TRY(stage_cmdline(d, first, argc, argv));
  if (!d->path) RW_TRY(dup_cstr("", &d->path));

  /* Unknown keys. */
  for (int i = 0; i < d->nentries; i++) {
    const deck_entry *e = &d->entries[i];
    if (find_key(d, e->name) >= 0 || is_petsc_name(e->name)) continue;
    const char *s = suggest(d, e->name);
    char hint[160] = "";
    if (s) snprintf(hint, sizeof hint, "; did you mean '%s'?", s);
    RW_TRY(deck_problem(d, "unknown key '%.100s' (from %s)%s Run with -help to list the keys.",
                        e->name, src_name(d, e->src), s ? hint : "."));
  }
  /* Effective values. */
  for (int k = 0; k < nkeys; k++) {
    deck_value *v = &d->vals[k];
    int i = find_entry(d, keys[k].name);
    if (i >= 0) {
      v->text = d->entries[i].value;
      v->src = d->entries[i].src;
    } else if (keys[k].def) {
      v->text = keys[k].def;
      v->src = SRC_TABLE;
    } else {
      v->text = NULL;
      v->src = SRC_UNSET;
    }
    RW_TRY(validate_key(d, k));
  }

  if (d->nproblems && !d->help) {
    if (d->nproblems == 1)
      ierr = RW_ERROR(RW_ERR_DECK, "%s", d->problems.s + 5); /* skip "\n  - " */
    else
      ierr =
          RW_ERROR(RW_ERR_DECK, "%d problems in the input deck:%s%s", d->nproblems, d->problems.s,
                   d->nproblems > RW_DECK_MAX_SHOWN ? "\n  - ... (more not shown)" : "");
    goto cleanup;
  }
  *out = d;
  return 0;
cleanup:
  rw_deck_destroy(&d);
  return ierr;
}

/* Destroys the deck and finalises PETSc when rw_deck_create initialised it and this is the
 * last deck holding that initialisation. Collective when it finalises PETSc. Accepts NULL
 * and a NULL *deck; sets *deck to NULL. Returns RW_ERR_PETSC if PetscFinalize fails. */
int rw_deck_destroy(rw_deck *deck)
{
  if (!deck || !*deck) return 0;
  rw_deck d = *deck;
  for (int i = 0; i < d->nentries; i++) {
    rw_free(&d->entries[i].name);
    rw_free(&d->entries[i].value);
  }
  rw_free(&d->entries);
  for (int i = 0; i < d->nsources; i++)
    rw_free(&d->sources[i]);
  rw_free(&d->sources);
  for (int i = 0; i < d->nfiles; i++)
    rw_free(&d->files[i]);
  rw_free(&d->files);
  for (int k = 0; k < d->nkeys && d->vals; k++)
    rw_free(&d->vals[k].array);
  rw_free(&d->vals);
  rw_free(&d->keys);
  rw_free(&d->app);
  rw_free(&d->path);
  sb_free(&d->problems);
  int owns = d->owns_petsc;
  rw_free(deck);
  if (owns) RW_CALL(petsc_stop());
  return 0;
}

/* 1 when -help, --help or -h was on the command line, else 0. Not collective. */
int rw_deck_help_requested(rw_deck deck) { return deck ? deck->help : 0; }

static int print_row(FILE *f, const int w[5], const char *c0, const char *c1, const char *c2,
                     const char *c3, const char *c4, const char *c5)
{
  return fprintf(f, "  %-*s  %-*s  %-*s  %-*s  %-*s  %s\n", w[0], c0, w[1], c1, w[2], c2, w[3], c3,
                 w[4], c4, c5);
}

/* Prints the usage line, every known key (name, type, default, unit, allowed values, help;
 * and the current value where the deck or command line changed it), the accepted PETSc
 * options and any problems found in the given deck. Not collective: call it on one rank. */
void rw_deck_print_help(rw_deck deck, FILE *f)
{
  if (!deck || !f) return;
  rw_deck d = deck;
  int w[5] = {4, 4, 7, 4, 7}, any_size = 0, any_bool = 0;
  char cell[5][256];
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) {
      fprintf(f, "Usage: %s [deck.yaml|deck.opts] [-key value ...]\n\n", d->app);
      fprintf(f, "A deck file is YAML (`key: value` lines; nested maps join with '_', so "
                 "`a: {b: 1}` sets a_b)\nor a PETSc options file (\"-key value\" lines, '#' "
                 "comments). Precedence, lowest first: key\ndefaults, the default deck, the deck "
                 "file, the command line.\n\nKeys:\n");
      print_row(f, w, "name", "type", "default", "unit", "allowed", "description");
    }
    for (int k = 0; k < d->nkeys; k++) {
      const rw_deck_key *key = &d->keys[k];
      snprintf(cell[0], sizeof cell[0], "-%s", key->name);
      if (key->type == RW_KEY_REAL_ARRAY && key->max_len > 0)
        snprintf(cell[1], sizeof cell[1], "reals[<=%d]", key->max_len);
      else
        snprintf(cell[1], sizeof cell[1], "%s", type_name(key->type));
      snprintf(cell[2], sizeof cell[2], "%s", key->def ? key->def : "(none)");
      snprintf(cell[3], sizeof cell[3], "%s", key->unit ? key->unit : "");
      if (key->type == RW_KEY_ENUM) {
        cell[4][0] = '\0';
        int nc = count_choices(key->choices);
        for (int i = 0; i < nc; i++) {
          char c[128];
          choice_at(key->choices, i, c, sizeof c);
          size_t l = strlen(cell[4]);
          snprintf(cell[4] + l, sizeof cell[4] - l, "%s%s", i ? "|" : "", c);
        }
      } else if (key->type == RW_KEY_BOOL) {
        snprintf(cell[4], sizeof cell[4], "true|false");
      } else {
        range_text(key, cell[4], sizeof cell[4]);
      }
      any_size |= key->type == RW_KEY_SIZE;
      any_bool |= key->type == RW_KEY_BOOL;
      if (pass == 0) {
        for (int c = 0; c < 5; c++) {
          int l = (int)strlen(cell[c]);
          if (l > w[c] && l <= 40) w[c] = l;
        }
        continue;
      }
      print_row(f, w, cell[0], cell[1], cell[2], cell[3], cell[4], key->help ? key->help : "");
      const deck_value *v = d->vals ? &d->vals[k] : NULL;
      size_t vn = 0, dn = 0;
      const char *vs = v && v->text ? trim_span(v->text, &vn) : NULL;
      const char *ds = key->def ? trim_span(key->def, &dn) : NULL;
      if (v && v->src >= 0 && (!vs || !ds || vn != dn || strncmp(vs, ds, vn) != 0)) {
        char more[48] = ""; /* a long value is shown in part, saying so */
        if (vn > 200) snprintf(more, sizeof more, "... (%zu bytes)", vn);
        fprintf(f, "  %-*s  now: %.*s%s (from %s)\n", w[0], "", vs ? (int)(vn > 200 ? 200 : vn) : 6,
                vs ? vs : "(flag)", more, src_name(d, v->src));
      }
    }
  }
  if (any_size)
    fprintf(f, "\nSizes take a unit: B, kB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB "
               "(powers of 1024),\ne.g. 512MiB, 8GiB, 1.5GB, 4096.\n");
  if (any_bool) fprintf(f, "\nBooleans: true/false, yes/no, on/off, 1/0.\n");
  fprintf(f, "\nAlso accepted: -help, -options_file <file>, -options_file_yaml <file> and PETSc's "
             "runtime options\n(-log_view, -malloc_debug, -info, -options_left, -version, ...; "
             "they take effect on the command line).\n");
  if (d->nproblems) {
    fprintf(f, "\nProblems in the given input (fix them before running):%s\n",
            d->problems.s ? d->problems.s : "");
    if (d->nproblems > RW_DECK_MAX_SHOWN) fprintf(f, "  - ... (more not shown)\n");
  }
}

/* The value record of a key, or an RW_ERR_ARG error when the key is not in the table, or
 * RW_ERR_DECK when its value was found bad (only possible with -help). */
static int lookup(rw_deck d, const char *key, const char *getter, deck_value **v, int *ki)
{
  RW_CHECK(d && key, RW_ERR_ARG, "%s: deck or key is NULL", getter);
  int k = find_key(d, key);
  RW_CHECK(k >= 0, RW_ERR_ARG, "%s: '%s' is not a key of this deck's table", getter, key);
  *v = &d->vals[k];
  *ki = k;
  RW_CHECK((*v)->src == SRC_UNSET || (*v)->valid, RW_ERR_DECK,
           "%s: key '%s' has no valid value (from %s); see the deck's problems", getter, key,
           src_name(d, (*v)->src));
  return 0;
}

static int check_type(rw_deck d, int k, const char *getter, rw_key_type a, rw_key_type b)
{
  rw_key_type t = d->keys[k].type;
  RW_CHECK(t == a || t == b, RW_ERR_ARG, "%s: key '%s' is of type %s", getter, d->keys[k].name,
           type_name(t));
  return 0;
}

/* Copies the key's effective value as text into buf (len bytes): for an enum the choice as
 * spelt in the table, for other types the value as given (trimmed, except strings). Works
 * for every type. An unset key gives "". Not collective (the deck is the same on every rank,
 * so every rank gets the same result).
 * A value that does not fit in buf is never truncated: RW_ERR_DECK naming the key, where the
 * value came from and the limit (len - 1 bytes: the caller's buffer is that key's limit),
 * with buf = "". Returns RW_ERR_ARG for an unknown key, or when an enum's choice (the
 * table's text, not the user's) does not fit. */
int rw_deck_get_string(rw_deck deck, const char *key, char *buf, size_t len)
{
  deck_value *v = NULL;
  int k = 0;
  char t[RW_DECK_MAX_VALUE + 1];
  RW_CHECK(buf && len > 0, RW_ERR_ARG, "rw_deck_get_string: buffer is NULL or empty");
  buf[0] = '\0';
  RW_CALL(lookup(deck, key, "rw_deck_get_string", &v, &k));
  if (v->src == SRC_UNSET) return 0;
  const char *s = v->text ? v->text : "";
  if (deck->keys[k].type == RW_KEY_ENUM) {
    choice_at(deck->keys[k].choices, v->choice, t, sizeof t);
    s = t;
  } else if (deck->keys[k].type != RW_KEY_STRING) {
    s = trimmed(s, t, sizeof t);
  }
  size_t n = strlen(s);
  RW_CHECK(n < len || deck->keys[k].type != RW_KEY_ENUM, RW_ERR_ARG,
           "rw_deck_get_string: choice '%s' of key '%s' needs %zu bytes, the buffer has %zu", s,
           key, n + 1, len);
  RW_CHECK(
      n<len, RW_ERR_DECK, "%s = '%.40s%s' (from %s) is %zu bytes long; this key takes at most %zu",
          deck->keys[k].name, s, n> 40
          ? "..."
          : "",
      src_name(deck, v->src), n, len - 1);
  memcpy(buf, s, n + 1);
  return 0;
}

/* Reads a REAL (or INT) key into *v; an unset key leaves *v unchanged. Not collective.
 * Returns RW_ERR_ARG for an unknown key or one of another type. */
int rw_deck_get_real(rw_deck deck, const char *key, double *v)
{
  deck_value *dv = NULL;
  int k = 0;
  RW_CHECK(v, RW_ERR_ARG, "rw_deck_get_real: output pointer is NULL");
  RW_CALL(lookup(deck, key, "rw_deck_get_real", &dv, &k));
  RW_CALL(check_type(deck, k, "rw_deck_get_real", RW_KEY_REAL, RW_KEY_INT));
  if (dv->src == SRC_UNSET) return 0;
  *v = deck->keys[k].type == RW_KEY_INT ? (double)dv->integer : dv->real;
  return 0;
}

/* Reads an INT key into *v; an unset key leaves *v unchanged. Not collective.
 * Returns RW_ERR_ARG for an unknown key or one of another type. */
int rw_deck_get_int(rw_deck deck, const char *key, long *v)
{
  deck_value *dv = NULL;
  int k = 0;
  RW_CHECK(v, RW_ERR_ARG, "rw_deck_get_int: output pointer is NULL");
  RW_CALL(lookup(deck, key, "rw_deck_get_int", &dv, &k));
  RW_CALL(check_type(deck, k, "rw_deck_get_int", RW_KEY_INT, RW_KEY_INT));
  if (dv->src != SRC_UNSET) *v = dv->integer;
  return 0;
}

/* Reads a BOOL key into *v (0 or 1); an unset key leaves *v unchanged. Not collective.
 * Returns RW_ERR_ARG for an unknown key or one of another type. */
int rw_deck_get_bool(rw_deck deck, const char *key, int *v)
{
  deck_value *dv = NULL;
  int k = 0;
  RW_CHECK(v, RW_ERR_ARG, "rw_deck_get_bool: output pointer is NULL");
  RW_CALL(lookup(deck, key, "rw_deck_get_bool", &dv, &k));
  RW_CALL(check_type(deck, k, "rw_deck_get_bool", RW_KEY_BOOL, RW_KEY_BOOL));
  if (dv->src != SRC_UNSET) *v = dv->boolean;
  return 0;
}

/* Reads a SIZE key into *bytes; an unset key leaves *bytes unchanged. Not collective.
 * Returns RW_ERR_ARG for an unknown key or one of another type. */
int rw_deck_get_size(rw_deck deck, const char *key, size_t *bytes)
{
  deck_value *dv = NULL;
  int k = 0;
  RW_CHECK(bytes, RW_ERR_ARG, "rw_deck_get_size: output pointer is NULL");
  RW_CALL(lookup(deck, key, "rw_deck_get_size", &dv, &k));
  RW_CALL(check_type(deck, k, "rw_deck_get_size", RW_KEY_SIZE, RW_KEY_SIZE));
  if (dv->src != SRC_UNSET) *bytes = dv->size;
  return 0;
}

/* Reads a REAL_ARRAY key. *n is in/out: on input the capacity of v (entries), on output the
 * number of entries read (0 for an unset key; v may then be NULL). Not collective.
 * Returns RW_ERR_ARG for an unknown key, one of another type, or when the value has more
 * entries than the capacity. */
int rw_deck_get_real_array(rw_deck deck, const char *key, double *v, int *n)
{
  deck_value *dv = NULL;
  int k = 0;
  RW_CHECK(n, RW_ERR_ARG, "rw_deck_get_real_array: count pointer is NULL");
  RW_CALL(lookup(deck, key, "rw_deck_get_real_array", &dv, &k));
  RW_CALL(check_type(deck, k, "rw_deck_get_real_array", RW_KEY_REAL_ARRAY, RW_KEY_REAL_ARRAY));
  int have = dv->src == SRC_UNSET ? 0 : dv->n;
  RW_CHECK(have <= *n && (have == 0 || v), RW_ERR_ARG,
           "rw_deck_get_real_array: '%s' has %d entries, the array holds %d", key, have, *n);
  if (have) memcpy(v, dv->array, (size_t)have * sizeof *v);
  *n = have;
  return 0;
}

/* *is_set = 1 when the key has a value (from a table default or any input), else 0.
 * Not collective. Returns RW_ERR_ARG for an unknown key. */
int rw_deck_is_set(rw_deck deck, const char *key, int *is_set)
{
  RW_CHECK(deck && key && is_set, RW_ERR_ARG, "rw_deck_is_set: NULL argument");
  int k = find_key(deck, key);
  RW_CHECK(k >= 0, RW_ERR_ARG, "rw_deck_is_set: '%s' is not a key of this deck's table", key);
  *is_set = deck->vals[k].src != SRC_UNSET;
  return 0;
}

int rw_deck_user_set(rw_deck deck, const char *key)
{
  int k = deck && key ? find_key(deck, key) : -1;
  if (k < 0) return 0;
  int src = deck->vals[k].src;
  return src != SRC_UNSET && src != SRC_TABLE && src != SRC_DEFAULT_DECK;
}

/* Where the key's effective value came from: "default" (the key table), "default deck",
 * "deck file 'path'", "command line", or "not set"; "unknown key" for a key not in the
 * table. The string lives as long as the deck. Not collective. */
const char *rw_deck_source(rw_deck deck, const char *key)
{
  if (!deck || !key) return "unknown key";
  int k = find_key(deck, key);
  return k < 0 ? "unknown key" : src_name(deck, deck->vals[k].src);
}

/* The deck file path given as argv[1] (or the first -options_file), "" when none. Not
 * collective. */
const char *rw_deck_path(rw_deck deck) { return deck && deck->path ? deck->path : ""; }

/* Deck file i (0: argv[1] or the first -options_file; then every other one read, nested ones
 * included, in reading order), NULL past the last. Not collective. */
const char *rw_deck_file(rw_deck deck, int i)
{
  return deck && i >= 0 && i < deck->nfiles ? deck->files[i] : NULL;
}

/* Appends a YAML single-quoted scalar. */
static int yaml_quoted(strbuf *b, const char *s)
{
  RW_CALL(sb_printf(b, "'"));
  for (const char *p = s; *p; p++)
    RW_CALL(sb_printf(b, *p == '\'' ? "''" : "%c", *p));
  return sb_printf(b, "'");
}

/* 1 when text can be written as a plain YAML scalar that reads back as the same text:
 * letters, digits, '.', '+', '-', '_' and inner spaces, not starting with a sign unless a
 * digit or '.' follows, and not a YAML null ("~", "null"). */
static int yaml_plain_ok(const char *s)
{
  size_t n = strlen(s);
  if (!n || is_space((unsigned char)s[0]) || is_space((unsigned char)s[n - 1])) return 0;
  if ((s[0] == '-' || s[0] == '+') && !(isdigit((unsigned char)s[1]) || s[1] == '.')) return 0;
  if (streq_ci(s, "null")) return 0;
  for (const char *p = s; *p; p++)
    if (!isalnum((unsigned char)*p) && !strchr(".+-_ ", *p)) return 0;
  return 1;
}

/* The effective deck as YAML text into b. */
static int write_yaml(rw_deck d, strbuf *b)
{
  char t[RW_DECK_MAX_VALUE + 1]; /* validate_key refused longer values of these types */
  for (int k = 0; k < d->nkeys; k++) {
    const rw_deck_key *key = &d->keys[k];
    const deck_value *v = &d->vals[k];
    if (v->src == SRC_UNSET || !v->valid) {
      RW_CALL(sb_printf(b, "# %s: (not set)\n", key->name));
      continue;
    }
    RW_CALL(sb_printf(b, "%s: ", key->name));
    switch (key->type) {
    case RW_KEY_STRING:
      RW_CALL(yaml_quoted(b, v->text ? v->text : ""));
      break;
    case RW_KEY_BOOL:
      RW_CALL(sb_printf(b, "%s", v->boolean ? "true" : "false"));
      break;
    case RW_KEY_ENUM:
      choice_at(key->choices, v->choice, t, sizeof t);
      RW_CALL(sb_printf(b, "%s", t));
      break;
    case RW_KEY_REAL_ARRAY:
      RW_CALL(sb_printf(b, "["));
      for (int i = 0; i < v->n; i++) {
        char num[40];
        snprintf(num, sizeof num, "%.15g", v->array[i]); /* shortest that reads back exactly */
        if (strtod(num, NULL) != v->array[i]) snprintf(num, sizeof num, "%.17g", v->array[i]);
        RW_CALL(sb_printf(b, "%s%s", i ? ", " : "", num));
      }
      RW_CALL(sb_printf(b, "]"));
      break;
    default:
      trimmed(v->text, t, sizeof t);
      if (yaml_plain_ok(t))
        RW_CALL(sb_printf(b, "%s", t));
      else
        RW_CALL(yaml_quoted(b, t));
      break;
    }
    RW_CALL(sb_printf(b, "\n"));
  }
  return 0;
}

/* Writes the effective deck into buf: one "key: value" line per known key in table order
 * (strings single-quoted, numbers and sizes as given, booleans true/false, enums as spelt in
 * the table, arrays as [a, b] with every digit of each entry); a key with no value becomes a "#
 * key: (not set)" comment. The text reads back as a YAML deck with the same values. Not collective.
 * Returns RW_ERR_ARG if len is too small (rw_deck_yaml_length gives the size needed). */
int rw_deck_to_yaml(rw_deck deck, char *buf, size_t len)
{
  strbuf b = {0};
  int ierr = 0;
  RW_CHECK(deck && buf, RW_ERR_ARG, "rw_deck_to_yaml: deck or buffer is NULL");
  RW_TRY(write_yaml(deck, &b));
  RW_CHECK_GOTO(b.len < len, RW_ERR_ARG,
                "rw_deck_to_yaml: the effective deck needs %zu bytes, the buffer has %zu",
                b.len + 1, len);
  memcpy(buf, b.s ? b.s : "", b.len + 1);
cleanup:
  sb_free(&b);
  return ierr;
}

/* *len = bytes rw_deck_to_yaml needs (text and terminating NUL). Not collective. */
int rw_deck_yaml_length(rw_deck deck, size_t *len)
{
  strbuf b = {0};
  int ierr = 0;
  RW_CHECK(deck && len, RW_ERR_ARG, "rw_deck_yaml_length: NULL argument");
  RW_TRY(write_yaml(deck, &b));
  *len = b.len + 1;
cleanup:
  sb_free(&b);
  return ierr;
}

/* Parses a size: a whole number (or a decimal with a unit) and an optional unit, spaces
 * allowed between: B (or none, bytes), kB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB
 * (powers of 1024); units ignore case ("kb" = kB, "GIB" = GiB); bare K/M/G/T are refused as
 * ambiguous. Fractions are rounded to the nearest byte ("1.5KiB" = 1536) but a plain byte
 * count must be whole. Not collective. Returns RW_ERR_DECK with a message for empty,
 * negative, malformed or overflowing text or an unknown unit; RW_ERR_ARG for NULL pointers. */
int rw_parse_size(const char *text, size_t *bytes)
{
  char why[160];
  RW_CHECK(text && bytes, RW_ERR_ARG, "rw_parse_size: NULL argument");
  size_t b = 0;
  RW_CHECK(!size_parse(text, &b, why, sizeof why), RW_ERR_DECK, "size '%.100s': %s", text, why);
  *bytes = b;
  return 0;
}
