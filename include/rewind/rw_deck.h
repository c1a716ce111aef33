/* Input decks on PETSc's options database.
 *
 * A deck is a YAML file (PETSc's YAML reader: nested maps flatten with '_', so
 * `checkpoint: {ram: 512MiB}` is the key checkpoint_ram) or a plain PETSc options file
 * ("-key value" lines). Precedence, lowest first: the app's embedded default deck, the deck
 * file named as the first command-line argument, then "-key value" pairs on the command line.
 * On top of the options database, one table of known keys (type, default, unit, range, help)
 * gives -help, rejects unknown or misspelt keys with a suggestion, checks every value's type
 * and range at start-up, and reads sizes with units (512MiB, 8GiB, 1.5GB, 4096).
 *
 * Errors name where the value came from (the deck file, the command line or the default
 * deck), the key, the value and what is allowed. A key set twice in one file (also after
 * flattening: `adjoint: {mode: store}` and `adjoint_mode: checkpoint`) is an error naming the
 * file, the key and both lines. Only io/ and apps/ touch PETSc. */
#ifndef REWIND_RW_DECK_H
#define REWIND_RW_DECK_H

#include "rw_context.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  RW_KEY_STRING, /* any text */
  RW_KEY_REAL,   /* a double within [min, max] */
  RW_KEY_INT,    /* an integer (long) within [min, max] */
  RW_KEY_BOOL,   /* true/false, yes/no, on/off, 1/0 */
  RW_KEY_SIZE,   /* bytes: an integer with an optional unit B, kB, MB, GB, TB, KiB, MiB, GiB, TiB */
  RW_KEY_ENUM,   /* one of `choices` (comma-separated) */
  RW_KEY_REAL_ARRAY /* comma-separated reals, at most `max_len` of them, each in [min, max] */
} rw_key_type;

typedef struct {
  const char *name; /* without the leading '-', e.g. "dt", "checkpoint_ram" */
  rw_key_type type;
  const char *def;     /* default value as text (NULL: no default; the key is optional) */
  const char *unit;    /* shown in help, e.g. "s", "bytes"; may be NULL */
  double min, max;     /* inclusive range for REAL/INT/SIZE/REAL_ARRAY */
  int min_exclusive;   /* 1: value must be > min (e.g. dt > 0) */
  const char *choices; /* ENUM: "euler,heun,rk4" */
  int max_len;         /* REAL_ARRAY: maximum number of entries */
  const char *help;    /* one line */
} rw_deck_key;

/* Ranges (REAL, INT, SIZE, REAL_ARRAY entries): the value must lie in [min, max], or in
 * (min, max] with min_exclusive. A bound at or beyond +-1e300 is not shown as a bound, but a
 * finite one still limits: with -1e300, 1e300 the value must be finite (inf and 1e301 are
 * refused, "must be finite (|x| <= 1e+300)"); +-INFINITY is no bound at all.
 * min = max = 0 means no range at all, except that min_exclusive alone then means > 0.
 * max_len <= 0 for a REAL_ARRAY means no limit on the number of entries. The table's
 * strings must outlive the deck. */

/* Value lengths in bytes (without the terminating NUL). A STRING value (a path, a list) has at
 * most RW_DECK_MAX_STRING; any other value, and each entry of a REAL_ARRAY, at most
 * RW_DECK_MAX_VALUE after trimming white space. A longer value is an error naming the key and
 * the limit, never truncated; so a buffer of RW_DECK_MAX_STRING + 1 bytes holds any STRING
 * value (rw_deck_get_string). */
#define RW_DECK_MAX_STRING 4095
#define RW_DECK_MAX_VALUE  255

typedef struct rw_deck_s *rw_deck;

/* Builds the deck: initialises PETSc if needed (MPI must already be initialised), inserts the
 * embedded default deck (YAML text, may be NULL), the deck file given as argv[1] when it does
 * not start with '-' (a file holding a NUL byte, such as UTF-16 text, is refused naming the
 * offset and line), then the command-line options; then checks every set option against
 * the table (unknown key -> error with the closest known key as a suggestion) and every
 * known key's value against its type and range. `-help` or `--help` does not fail: it sets
 * rw_deck_help_requested. Returns RW_ERR_DECK with a message on bad input (same on every
 * rank). Collective on comm. */
int rw_deck_create(MPI_Comm comm, const char *app, const rw_deck_key *keys, int nkeys,
                   const char *default_yaml, int argc, char **argv, rw_deck *out);

/* Destroys the deck and finalises PETSc if rw_deck_create initialised it. Accepts NULL. */
int rw_deck_destroy(rw_deck *deck);

/* 1 when -help/--help was given (or -h). rw_deck_create then succeeds even when the deck
 * has problems (unknown keys, bad values, unreadable files): rw_deck_print_help lists them
 * after the keys, and a getter of a key whose value is bad returns RW_ERR_DECK. */
int rw_deck_help_requested(rw_deck deck);
/* Prints usage and every known key (type, default, unit, range, help) to `f`. */
void rw_deck_print_help(rw_deck deck, FILE *f);

/* Typed getters; the key must be in the table (RW_ERR_ARG otherwise). Values were validated
 * at creation. A key with no default and no value: *is_set (if non-NULL) = 0.
 * get_string never truncates: a value longer than len - 1 bytes is RW_ERR_DECK naming the key,
 * its source and that limit (a user's value too long for the caller's buffer; the same on
 * every rank), RW_ERR_ARG only when an enum's choice from the table does not fit.
 * A getter on a key with no value leaves the output unchanged (get_string gives "",
 * get_real_array gives *n = 0). get_string works for every type (an enum as spelt in the
 * table); get_real also reads INT keys. For get_real_array, *n is in/out: the capacity of v
 * on input, the number of entries on output. */
int rw_deck_get_string(rw_deck deck, const char *key, char *buf, size_t len);
int rw_deck_get_real(rw_deck deck, const char *key, double *v);
int rw_deck_get_int(rw_deck deck, const char *key, long *v);
int rw_deck_get_bool(rw_deck deck, const char *key, int *v);
int rw_deck_get_size(rw_deck deck, const char *key, size_t *bytes);
int rw_deck_get_real_array(rw_deck deck, const char *key, double *v, int *n);
int rw_deck_is_set(rw_deck deck, const char *key, int *is_set);
/* 1 when the user gave `key` (a deck file or the command line), 0 when its value is the key
 * table's default or the app's embedded default deck's, or it has none (or is unknown). */
int rw_deck_user_set(rw_deck deck, const char *key);

/* Where the key's value came from: "default", "deck file 'path'", "command line". */
const char *rw_deck_source(rw_deck deck, const char *key);
/* (Also "default deck" for the embedded default YAML, "not set" for a key with no value and
 * "unknown key" for a name not in the table.) */
/* The deck file path ("" when none). */
const char *rw_deck_path(rw_deck deck);
/* Deck file i of those read, in reading order (0 is rw_deck_path's; then the -options_file
 * ones, nested ones included), NULL past the last: the files a run must not overwrite. */
const char *rw_deck_file(rw_deck deck, int i);

/* Writes the effective deck (every known key = value, one "key: value" line each, YAML
 * that the app reads back) into buf. Returns RW_ERR_ARG if len is too small. */
int rw_deck_to_yaml(rw_deck deck, char *buf, size_t len);
/* The number of bytes (text and terminating NUL) that rw_deck_to_yaml needs. */
int rw_deck_yaml_length(rw_deck deck, size_t *len);

/* Parses a size with unit ("512MiB") into bytes; RW_ERR_DECK with a message on bad text. */
int rw_parse_size(const char *text, size_t *bytes);

#ifdef __cplusplus
}
#endif
#endif
