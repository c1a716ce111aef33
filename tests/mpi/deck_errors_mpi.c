/* Deck errors are collective: every rank must return the same code and the same message, so
 * an app can print on rank 0 and exit non-zero on every rank without MPI_Abort. Files are
 * read on rank 0 and broadcast; this program checks missing files, YAML syntax errors, bad
 * lines in options files, bad values, unknown keys and files that are not text (a NUL byte,
 * UTF-16) on 2 ranks, then a good deck.
 * Usage: deck_errors_mpi (finds tests/decks through REWIND_SOURCE_DIR). Exit 0 on success. */
#include "rewind/rw_deck.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const rw_deck_key keys[] = {
    {"dt", RW_KEY_REAL, "0.01", "s", 0, 0, 1, NULL, 0, "time step"},
    {"tf", RW_KEY_REAL, "1.0", "s", -1e300, 1e300, 0, NULL, 0, "final time"},
    {"steps", RW_KEY_INT, "100", NULL, 1, 1e9, 0, NULL, 0, "number of steps"},
    {"stepper", RW_KEY_ENUM, "rk4", NULL, 0, 0, 0, "euler,heun,rk4", 0, "explicit method"},
    {"verbose", RW_KEY_BOOL, "false", NULL, 0, 0, 0, NULL, 0, "print more"},
    {"checkpoint_ram", RW_KEY_SIZE, "512MiB", "bytes", 0, 0, 0, NULL, 0, "RAM budget"},
    {"checkpoint_disk", RW_KEY_SIZE, "0", "bytes", 0, 0, 0, NULL, 0, "disk budget"},
    {"weights", RW_KEY_REAL_ARRAY, "1,2", NULL, -10, 10, 0, NULL, 3, "objective weights"},
    {"output", RW_KEY_STRING, "out.h5", NULL, 0, 0, 0, NULL, 0, "result file"},
};
#define NKEYS ((int)(sizeof keys / sizeof keys[0]))

/* Creates a deck from `file` (NULL: none) and checks that all ranks agree on the code and the
 * message, and that the code is `want`. Returns the number of failed checks (same on all). */
static int check(const char *file, int want, rw_deck *keep)
{
  int rank = 0, fails = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char *argv[] = {"deck_errors_mpi", (char *)file, NULL};
  rw_deck deck = NULL;
  rw_error_clear();
  int ierr = rw_deck_create(MPI_COMM_WORLD, "deck_errors_mpi", keys, NKEYS, NULL, file ? 2 : 1,
                            argv, &deck);
  char mine[4096], root[4096];
  snprintf(mine, sizeof mine, "%d:%s", ierr, rw_error_message());
  memcpy(root, mine, sizeof root);
  MPI_Bcast(root, (int)sizeof root, MPI_CHAR, 0, MPI_COMM_WORLD);
  int bad = strcmp(mine, root) != 0 || ierr != want;
  if (bad) fprintf(stderr, "rank %d, deck %s: got %s\n  rank 0 got %s\n", rank, file, mine, root);
  MPI_Allreduce(&bad, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("%s -> %s\n\n", file ? file : "(no deck)", ierr ? rw_error_message() : "ok");
  if (keep && !ierr)
    *keep = deck;
  else
    rw_deck_destroy(&deck);
  return fails;
}

int main(int argc, char **argv)
{
  int rank = 0, fails = 0;
  enum { NDECKS = 9 };
  char path[NDECKS][4096];
  const char *names[NDECKS] = {"nonexistent.yaml", "bad_syntax.yaml", "bad_line.opts",
                               "bad_values.yaml",  "typo.yaml",       "nul_byte.yaml",
                               "nul_byte.opts",    "utf16.yaml",      "good.yaml"};
  const char *root = getenv("REWIND_SOURCE_DIR");
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 0; i < NDECKS; i++)
    snprintf(path[i], sizeof path[i], "%s/tests/decks/%s", root ? root : ".", names[i]);

  /* One deck stays alive throughout: PETSc cannot start again after it is finalised. */
  rw_deck holder = NULL, good = NULL;
  fails += check(NULL, 0, &holder);
  for (int i = 0; i < NDECKS - 1; i++)
    fails += check(path[i], RW_ERR_DECK, NULL);
  fails += check(path[NDECKS - 1], 0, &good);
  if (good) {
    double dt = 0, all[2] = {0, 0};
    rw_deck_get_real(good, "dt", &dt);
    MPI_Allreduce(&dt, &all[0], 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&dt, &all[1], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (all[0] != 0.05 || all[1] != 0.05) {
      if (rank == 0)
        fprintf(stderr, "dt differs between ranks or is wrong: %g..%g\n", all[0], all[1]);
      fails++;
    }
  } else {
    fails++;
  }
  rw_deck_destroy(&good);
  rw_deck_destroy(&holder);
  if (rank == 0) printf("%s: %d failed checks\n", argv[0], fails);
  MPI_Finalize();
  return fails ? 1 : 0;
}
