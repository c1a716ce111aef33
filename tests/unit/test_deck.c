/* Input decks: precedence (key defaults < default deck < deck file < command line), source
 * tracking, unknown keys with suggestions, value checks, sizes, -help, and the effective deck
 * read back from YAML. PETSc starts once per process and cannot start again after
 * PetscFinalize, so a test that needs two decks keeps the first alive while it makes the
 * second. Deck files live in tests/decks (found through REWIND_SOURCE_DIR). */
#define _POSIX_C_SOURCE 200809L
#include "rewind/rw_deck.h"
#include "rw_test.h"

#include <glob.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(deck, .init = rw_test_mpi_init, .fini = rw_test_mpi_fini);

static const rw_deck_key keys[] = {
    {"dt", RW_KEY_REAL, "0.01", "s", 0, 0, 1, NULL, 0, "time step"},
    {"tf", RW_KEY_REAL, "1.0", "s", -1e300, 1e300, 0, NULL, 0, "final time"},
    {"steps", RW_KEY_INT, "100", NULL, 1, 1e9, 0, NULL, 0, "number of steps"},
    {"stepper", RW_KEY_ENUM, "rk4", NULL, 0, 0, 0, "euler,heun,rk4", 0, "explicit method"},
    {"verbose", RW_KEY_BOOL, "false", NULL, 0, 0, 0, NULL, 0, "print more"},
    {"checkpoint_ram", RW_KEY_SIZE, "512MiB", "bytes", 1024, 1099511627776.0, 0, NULL, 0,
     "RAM budget for checkpoints"},
    {"checkpoint_disk", RW_KEY_SIZE, "0", "bytes", 0, 0, 0, NULL, 0, "disk budget"},
    {"weights", RW_KEY_REAL_ARRAY, "1,2", NULL, -10, 10, 0, NULL, 3, "objective weights"},
    {"output", RW_KEY_STRING, "out.h5", NULL, 0, 0, 0, NULL, 0, "result file"},
    {"label", RW_KEY_STRING, NULL, NULL, 0, 0, 0, NULL, 0, "optional run label"},
};
#define NKEYS ((int)(sizeof keys / sizeof keys[0]))

static const char default_yaml[] = "# embedded default deck\n"
                                   "dt: 0.02\n"
                                   "checkpoint:\n"
                                   "  ram: 1GiB\n";

/* Path of a file in tests/decks. */
static const char *deck_path(const char *name)
{
  static char buf[4][4096];
  static int next = 0;
  const char *root = getenv("REWIND_SOURCE_DIR");
  char *b = buf[next++ % 4];
  snprintf(b, sizeof buf[0], "%s/tests/decks/%s", root ? root : ".", name);
  return b;
}

/* rw_deck_create with a NULL-terminated argument list after the program name. */
static int make_deck(rw_deck *deck, const char *yaml, const char *first, ...)
{
  char *argv[64];
  int argc = 0;
  argv[argc++] = "app";
  va_list ap;
  va_start(ap, first);
  for (const char *a = first; a && argc < 63; a = va_arg(ap, const char *))
    argv[argc++] = (char *)a;
  va_end(ap);
  argv[argc] = NULL;
  return rw_deck_create(MPI_COMM_WORLD, "app", keys, NKEYS, yaml, argc, argv, deck);
}

/* Asserts that creation fails with RW_ERR_DECK and that the message holds each fragment. */
static void expect_deck_error(int ierr, const char *frag1, const char *frag2)
{
  cr_assert_eq(ierr, RW_ERR_DECK, "expected RW_ERR_DECK, got %d: %s", ierr, rw_error_message());
  cr_assert(strstr(rw_error_message(), frag1), "message lacks \"%s\":\n%s", frag1,
            rw_error_message());
  if (frag2)
    cr_assert(strstr(rw_error_message(), frag2), "message lacks \"%s\":\n%s", frag2,
              rw_error_message());
}

Test(deck, defaults)
{
  rw_deck deck = NULL;
  size_t mem0 = rw_mem_current();
  RW_TEST_OK(make_deck(&deck, default_yaml, NULL));
  double dt = 0, tf = 0, w[3] = {0};
  long steps = 0;
  int verbose = -1, set = -1, n = 3;
  size_t ram = 0, disk = 1;
  char s[64];
  RW_TEST_OK(rw_deck_get_real(deck, "dt", &dt));
  RW_TEST_OK(rw_deck_get_real(deck, "tf", &tf));
  RW_TEST_OK(rw_deck_get_int(deck, "steps", &steps));
  RW_TEST_OK(rw_deck_get_bool(deck, "verbose", &verbose));
  RW_TEST_OK(rw_deck_get_size(deck, "checkpoint_ram", &ram));
  RW_TEST_OK(rw_deck_get_size(deck, "checkpoint_disk", &disk));
  RW_TEST_OK(rw_deck_get_real_array(deck, "weights", w, &n));
  cr_expect_eq(dt, 0.02);
  cr_expect_eq(tf, 1.0);
  cr_expect_eq(steps, 100);
  cr_expect_eq(verbose, 0);
  cr_expect_eq(ram, (size_t)1 << 30);
  cr_expect_eq(disk, 0);
  cr_expect_eq(n, 2);
  cr_expect(w[0] == 1.0 && w[1] == 2.0);
  RW_TEST_OK(rw_deck_get_string(deck, "stepper", s, sizeof s));
  cr_expect_str_eq(s, "rk4");
  cr_expect_str_eq(rw_deck_source(deck, "dt"), "default deck");
  cr_expect_str_eq(rw_deck_source(deck, "checkpoint_ram"), "default deck");
  cr_expect_str_eq(rw_deck_source(deck, "steps"), "default");
  cr_expect_str_eq(rw_deck_source(deck, "label"), "not set");
  cr_expect_str_eq(rw_deck_source(deck, "nokey"), "unknown key");
  cr_expect_str_eq(rw_deck_path(deck), "");
  cr_expect_eq(rw_deck_help_requested(deck), 0);
  /* A key with no default and no value. */
  RW_TEST_OK(rw_deck_is_set(deck, "label", &set));
  cr_expect_eq(set, 0);
  RW_TEST_OK(rw_deck_is_set(deck, "steps", &set));
  cr_expect_eq(set, 1);
  strcpy(s, "junk");
  RW_TEST_OK(rw_deck_get_string(deck, "label", s, sizeof s));
  cr_expect_str_eq(s, "");
  /* Getter misuse: unknown key, wrong type, small buffers. */
  cr_expect_eq(rw_deck_get_real(deck, "dtt", &dt), RW_ERR_ARG);
  cr_expect_eq(rw_deck_get_int(deck, "dt", &steps), RW_ERR_ARG);
  cr_expect_eq(rw_deck_get_string(deck, "stepper", s, 3), RW_ERR_ARG); /* the table's text */
  cr_expect_eq(rw_deck_get_string(deck, "output", s, 3), RW_ERR_DECK); /* the user's text */
  cr_expect(strstr(rw_error_message(),
                   "output = 'out.h5' (from default) is 6 bytes long; this key takes at most 2"),
            "%s", rw_error_message());
  n = 1;
  cr_expect_eq(rw_deck_get_real_array(deck, "weights", w, &n), RW_ERR_ARG);
  rw_error_clear();
  RW_TEST_OK(rw_deck_destroy(&deck));
  cr_expect_null(deck);
  RW_TEST_OK(rw_deck_destroy(&deck)); /* NULL is fine */
  cr_expect_eq(rw_mem_current(), mem0, "deck leaked %zu bytes", rw_mem_current() - mem0);
}

Test(deck, yaml_file_overrides_default)
{
  rw_deck deck = NULL;
  const char *path = deck_path("good.yaml");
  RW_TEST_OK(make_deck(&deck, default_yaml, path, NULL));
  double dt = 0, w[3] = {0};
  long steps = 0;
  int verbose = 0, n = 3;
  size_t ram = 0, disk = 0;
  char s[64], src[4200];
  RW_TEST_OK(rw_deck_get_real(deck, "dt", &dt));
  RW_TEST_OK(rw_deck_get_int(deck, "steps", &steps));
  RW_TEST_OK(rw_deck_get_bool(deck, "verbose", &verbose));
  RW_TEST_OK(rw_deck_get_size(deck, "checkpoint_ram", &ram));
  RW_TEST_OK(rw_deck_get_size(deck, "checkpoint_disk", &disk));
  RW_TEST_OK(rw_deck_get_real_array(deck, "weights", w, &n));
  cr_expect_eq(dt, 0.05);
  cr_expect_eq(steps, 200);
  cr_expect_eq(verbose, 1);
  /* Nested YAML maps: checkpoint: {ram: ..., disk: ...} -> checkpoint_ram, checkpoint_disk. */
  cr_expect_eq(ram, (size_t)256 << 20);
  cr_expect_eq(disk, (size_t)8 << 30);
  cr_expect_eq(n, 3);
  cr_expect(w[0] == 0.5 && w[1] == -1.25 && w[2] == 3.0);
  RW_TEST_OK(rw_deck_get_string(deck, "stepper", s, sizeof s));
  cr_expect_str_eq(s, "heun");
  RW_TEST_OK(rw_deck_get_string(deck, "output", s, sizeof s));
  cr_expect_str_eq(s, "run one.h5");
  snprintf(src, sizeof src, "deck file '%s'", path);
  cr_expect_str_eq(rw_deck_source(deck, "dt"), src);
  cr_expect_str_eq(rw_deck_source(deck, "checkpoint_ram"), src);
  cr_expect_str_eq(rw_deck_source(deck, "tf"), "default");
  cr_expect_str_eq(rw_deck_path(deck), path);
  RW_TEST_OK(rw_deck_destroy(&deck));
}

Test(deck, command_line_overrides_file)
{
  rw_deck deck = NULL;
  RW_TEST_OK(make_deck(&deck, default_yaml, deck_path("good.yaml"), "-dt", "0.5", "--stepper",
                       "RK4", "-verbose", "off", "-checkpoint_ram", "2 GiB", "-weights", "-1,2",
                       "-TF", "-3e-1", "-label", NULL));
  double dt = 0, tf = 0, w[3] = {0};
  int verbose = 1, n = 3;
  size_t ram = 0;
  char s[64];
  RW_TEST_OK(rw_deck_get_real(deck, "dt", &dt));
  RW_TEST_OK(rw_deck_get_real(deck, "tf", &tf));
  RW_TEST_OK(rw_deck_get_bool(deck, "verbose", &verbose));
  RW_TEST_OK(rw_deck_get_size(deck, "checkpoint_ram", &ram));
  RW_TEST_OK(rw_deck_get_real_array(deck, "weights", w, &n));
  cr_expect_eq(dt, 0.5);
  cr_expect_eq(tf, -0.3); /* a negative number is a value, not a key; keys ignore case */
  cr_expect_eq(verbose, 0);
  cr_expect_eq(ram, (size_t)2 << 30);
  cr_expect(n == 2 && w[0] == -1.0 && w[1] == 2.0);
  RW_TEST_OK(rw_deck_get_string(deck, "stepper", s, sizeof s));
  cr_expect_str_eq(s, "rk4"); /* enum choices ignore case and come back as in the table */
  cr_expect_str_eq(rw_deck_source(deck, "dt"), "command line");
  cr_expect_str_eq(rw_deck_source(deck, "stepper"), "command line");
  cr_expect(strstr(rw_deck_source(deck, "steps"), "deck file '"));
  /* A string given as a bare flag is the empty string, and counts as set. */
  int set = 0;
  RW_TEST_OK(rw_deck_is_set(deck, "label", &set));
  cr_expect_eq(set, 1);
  RW_TEST_OK(rw_deck_destroy(&deck));
}

Test(deck, plain_options_file)
{
  rw_deck deck = NULL;
  const char *path = deck_path("good.opts");
  RW_TEST_OK(make_deck(&deck, default_yaml, path, "-steps", "7", NULL));
  double dt = 0, w[3] = {0};
  long steps = 0;
  int verbose = 1, n = 3;
  size_t ram = 0, disk = 0;
  char s[64], src[4200];
  RW_TEST_OK(rw_deck_get_real(deck, "dt", &dt));
  RW_TEST_OK(rw_deck_get_int(deck, "steps", &steps));
  RW_TEST_OK(rw_deck_get_bool(deck, "verbose", &verbose));
  RW_TEST_OK(rw_deck_get_size(deck, "checkpoint_ram", &ram));
  RW_TEST_OK(rw_deck_get_size(deck, "checkpoint_disk", &disk));
  RW_TEST_OK(rw_deck_get_real_array(deck, "weights", w, &n));
  cr_expect_eq(dt, 0.125);
  cr_expect_eq(steps, 7);
  cr_expect_eq(verbose, 0);
  cr_expect_eq(ram, 100000);
  cr_expect_eq(disk, (size_t)2 << 30);
  cr_expect(n == 3 && w[0] == 1 && w[1] == 2 && w[2] == 3);
  RW_TEST_OK(rw_deck_get_string(deck, "output", s, sizeof s));
  cr_expect_str_eq(s, "plain.h5");
  snprintf(src, sizeof src, "deck file '%s'", path);
  cr_expect_str_eq(rw_deck_source(deck, "dt"), src);
  cr_expect_str_eq(rw_deck_source(deck, "steps"), "command line");
  RW_TEST_OK(rw_deck_destroy(&deck));
}

Test(deck, options_file_on_command_line_names_file)
{
  rw_deck deck = NULL;
  char want[4200];
  const char *path = deck_path("typo.yaml");
  snprintf(want, sizeof want, "unknown key 'dtt' (from deck file '%s'); did you mean 'dt'?", path);
  expect_deck_error(make_deck(&deck, NULL, "-options_file_yaml", path, NULL), want, NULL);
  cr_assert_null(deck);
}

Test(deck, options_file_yaml_on_command_line)
{
  rw_deck deck = NULL;
  RW_TEST_OK(make_deck(&deck, NULL, "-steps", "3", "-options_file", deck_path("good.opts"),
                       "-options_file_yaml", deck_path("good.yaml"), "-tf", "2", NULL));
  long steps = 0;
  double dt = 0;
  RW_TEST_OK(rw_deck_get_int(deck, "steps", &steps));
  RW_TEST_OK(rw_deck_get_real(deck, "dt", &dt));
  cr_expect_eq(steps, 200); /* good.yaml came last */
  cr_expect_eq(dt, 0.05);
  cr_expect(strstr(rw_deck_source(deck, "steps"), "good.yaml'"));
  cr_expect_str_eq(rw_deck_source(deck, "tf"), "command line");
  cr_expect_str_eq(rw_deck_path(deck), deck_path("good.opts"));
  RW_TEST_OK(rw_deck_destroy(&deck));
}

Test(deck, petsc_options_pass)
{
  rw_deck deck = NULL;
  RW_TEST_OK(make_deck(&deck, default_yaml, "-options_left", "false", "-malloc_dump",
                       "-skip_petscrc", "-dt", "0.3", NULL));
  double dt = 0;
  RW_TEST_OK(rw_deck_get_real(deck, "dt", &dt));
  cr_expect_eq(dt, 0.3);
  RW_TEST_OK(rw_deck_destroy(&deck));
}

Test(deck, unknown_key_in_file_suggests)
{
  rw_deck deck = NULL;
  const char *path = deck_path("typo.yaml");
  char want[4200];
  snprintf(want, sizeof want,
           "unknown key 'dtt' (from deck file '%s'); did you mean 'dt'? Run with -help to list "
           "the keys.",
           path);
  expect_deck_error(make_deck(&deck, default_yaml, path, NULL), want, NULL);
  cr_expect_null(deck);
}

Test(deck, unknown_key_on_command_line)
{
  rw_deck deck = NULL;
  size_t mem0 = rw_mem_current();
  int ierr = make_deck(&deck, default_yaml, "-zzqqxxyy", "1", "stray", "-chekpoint_ram", "1GiB",
                       "-log_veiw", NULL);
  expect_deck_error(ierr, "unknown key 'zzqqxxyy' (from command line). Run with -help",
                    "unknown key 'chekpoint_ram' (from command line); did you mean "
                    "'checkpoint_ram'?");
  cr_expect(strstr(rw_error_message(), "did you mean 'log_view'?"), "%s", rw_error_message());
  cr_expect(strstr(rw_error_message(), "unexpected argument 'stray'"), "%s", rw_error_message());
  cr_expect(strstr(rw_error_message(), "4 problems in the input deck"), "%s", rw_error_message());
  cr_expect_eq(rw_mem_current(), mem0, "failed create leaked %zu bytes", rw_mem_current() - mem0);
}

Test(deck, wrong_type)
{
  rw_deck deck = NULL;
  expect_deck_error(make_deck(&deck, default_yaml, "-dt", "abc", NULL),
                    "dt = 'abc' (from command line) is not a real number", NULL);
}

Test(deck, wrong_types_each_kind)
{
  rw_deck deck = NULL;
  int ierr = make_deck(&deck, default_yaml, "-steps", "2.5", "-verbose", "maybe", "-weights", "1,x",
                       "-checkpoint_disk", "-5", NULL);
  expect_deck_error(ierr, "steps = '2.5' (from command line) is not an integer",
                    "verbose = 'maybe' (from command line) is not a boolean");
  cr_expect(strstr(rw_error_message(), "weights = '1,x' (from command line): entry 2 'x' is not "
                                       "a real number"),
            "%s", rw_error_message());
  cr_expect(strstr(rw_error_message(), "checkpoint_disk = '-5' (from command line): a size "
                                       "cannot be negative"),
            "%s", rw_error_message());
}

Test(deck, out_of_range)
{
  rw_deck deck = NULL;
  int ierr = make_deck(&deck, default_yaml, "-dt", "-0.1", "-steps", "0", "-checkpoint_ram", "10",
                       "-weights", "1,2,3,4", "-tf", "1e999", NULL);
  expect_deck_error(ierr, "dt = -0.1 (from command line) must be > 0",
                    "steps = 0 (from command line) must be in [1, 1e+09]");
  cr_expect(strstr(rw_error_message(), "checkpoint_ram = 10 (from command line) must be in "
                                       "[1KiB, 1TiB]"),
            "%s", rw_error_message());
  cr_expect(strstr(rw_error_message(), "weights = '1,2,3,4' (from command line) has 4 entries; "
                                       "at most 3 are allowed"),
            "%s", rw_error_message());
  cr_expect(strstr(rw_error_message(), "tf = '1e999' (from command line) is beyond the range of "
                                       "a real number (|x| <= 1.8e308)"),
            "%s", rw_error_message());
}

/* A number beyond its type's range is called that, not "not a number". */
Test(deck, out_of_range_numbers_are_named_so)
{
  rw_deck base = NULL, deck = NULL; /* base keeps PETSc up between the two (see the top) */
  RW_TEST_OK(make_deck(&base, NULL, NULL));
  int ierr = make_deck(&deck, NULL, "-steps", "99999999999999999999", "-dt", "-1e400", NULL);
  expect_deck_error(ierr,
                    "steps = '99999999999999999999' (from command line) is beyond the range of "
                    "an integer",
                    "dt = '-1e400' (from command line) is beyond the range of a real number");
  rw_deck_destroy(&deck);
  rw_error_clear();
  ierr = make_deck(&deck, NULL, "-steps", "1e30", "-weights", "1,1e999", NULL);
  expect_deck_error(ierr, "steps = '1e30' (from command line) is beyond the range of an integer",
                    "weights = '1,1e999' (from command line): entry 2 '1e999' is beyond the range");
  rw_deck_destroy(&deck);
  rw_error_clear();
  RW_TEST_OK(rw_deck_destroy(&base));
}

/* Keys whose bounds are +-1e300 still refuse inf and 1e301, and the message says what is
 * allowed instead of ending at "must be ". */
Test(deck, range_message_for_bounds_at_1e300)
{
  static const rw_deck_key k[] = {
      {"amp", RW_KEY_REAL, "1", NULL, -1e300, 1e300, 0, NULL, 0, "any finite real"},
      {"len", RW_KEY_REAL, "1", NULL, 0, 1e300, 1, NULL, 0, "a positive real"},
      {"low", RW_KEY_REAL, "1", NULL, -1e300, 5, 0, NULL, 0, "at most 5"},
      {"pts", RW_KEY_REAL_ARRAY, "0", NULL, -1e300, 1e300, 0, NULL, 4, "finite reals"},
      {"free", RW_KEY_REAL, "1", NULL, -INFINITY, INFINITY, 0, NULL, 0, "no bound at all"},
  };
  char *argv[] = {"app",  "-amp", "inf",   "-len",  "1e301", "-low",
                  "-inf", "-pts", "1,inf", "-free", "inf",   NULL};
  rw_deck deck = NULL, base = NULL;
  RW_TEST_OK(make_deck(&base, NULL, NULL)); /* keeps PETSc up for the decks below */
  int ierr = rw_deck_create(MPI_COMM_WORLD, "app", k, 5, NULL, 11, argv, &deck);
  expect_deck_error(ierr, "amp = inf (from command line) must be finite (|x| <= 1e+300)",
                    "len = 1e301 (from command line) must be > 0 and finite (<= 1e+300)");
  cr_expect(strstr(rw_error_message(),
                   "low = -inf (from command line) must be <= 5 and finite (>= -1e+300)"),
            "%s", rw_error_message());
  cr_expect(strstr(rw_error_message(), "pts = '1,inf' (from command line): entry 2 = inf must be "
                                       "finite (|x| <= 1e+300)"),
            "%s", rw_error_message());
  cr_expect(strstr(rw_error_message(), "4 problems in the input deck"), "%s", rw_error_message());
  cr_expect(!strstr(rw_error_message(), "free"), "%s", rw_error_message());
  cr_expect(!strstr(rw_error_message(), "must be \n") && !strstr(rw_error_message(), "must be ("),
            "%s", rw_error_message());
  /* -tf -inf and 1e301 against the shared table; the help says "finite" for such a key. */
  expect_deck_error(make_deck(&deck, NULL, "-tf", "-1e301", NULL),
                    "tf = -1e301 (from command line) must be finite (|x| <= 1e+300)", NULL);
  RW_TEST_OK(make_deck(&deck, NULL, "-help", NULL));
  FILE *f = tmpfile();
  cr_assert(f);
  rw_deck_print_help(deck, f);
  char text[8192] = "";
  rewind(f);
  cr_assert(fread(text, 1, sizeof text - 1, f) > 0);
  fclose(f);
  cr_expect(strstr(text, "finite"), "%s", text);
  RW_TEST_OK(rw_deck_destroy(&deck));
  RW_TEST_OK(rw_deck_destroy(&base));
}

Test(deck, array_entry_out_of_range)
{
  rw_deck deck = NULL;
  expect_deck_error(make_deck(&deck, NULL, "-weights", "1, 20", NULL),
                    "weights = '1, 20' (from command line): entry 2 = 20 must be in [-10, 10]",
                    NULL);
}

Test(deck, bad_enum)
{
  rw_deck deck = NULL;
  expect_deck_error(make_deck(&deck, default_yaml, "-stepper", "rk5", NULL),
                    "stepper = 'rk5' (from command line) is not one of: euler, heun, rk4",
                    "did you mean 'rk4'?");
}

Test(deck, bad_values_in_file)
{
  rw_deck deck = NULL;
  const char *path = deck_path("bad_values.yaml");
  char want[4200];
  int ierr = make_deck(&deck, default_yaml, path, NULL);
  snprintf(want, sizeof want,
           "checkpoint_ram = '12 parsecs' (from deck file '%s'): unknown unit 'parsecs'; use B, "
           "kB, MB, GB, TB, KiB, MiB, GiB, TiB",
           path);
  expect_deck_error(ierr, want, "3 problems in the input deck");
  snprintf(want, sizeof want, "dt = 'abc' (from deck file '%s') is not a real number", path);
  cr_expect(strstr(rw_error_message(), want), "%s", rw_error_message());
}

Test(deck, bad_default_deck_is_named)
{
  rw_deck deck = NULL;
  expect_deck_error(make_deck(&deck, "dt: zero\n", NULL),
                    "dt = 'zero' (from default deck) is not a real number", NULL);
}

Test(deck, missing_file)
{
  rw_deck deck = NULL;
  expect_deck_error(make_deck(&deck, default_yaml, "/nonexistent/x.yaml", NULL),
                    "deck file '/nonexistent/x.yaml' cannot be read: No such file or directory",
                    NULL);
  cr_expect_null(deck);
}

Test(deck, directory_as_file)
{
  rw_deck deck = NULL;
  expect_deck_error(make_deck(&deck, NULL, deck_path(""), NULL), "cannot be read:", NULL);
}

Test(deck, yaml_syntax_error_names_file)
{
  rw_deck deck = NULL;
  char want[4200];
  const char *path = deck_path("bad_syntax.yaml");
  snprintf(want, sizeof want, "deck file '%s' is not a valid deck", path);
  expect_deck_error(make_deck(&deck, default_yaml, path, NULL), want,
                    "YAML error at line 3, column 10: mapping values are not allowed");
}

/* libyaml reads each YAML text before PETSc's reader (whose message has no line): a syntax
 * error names its line and column, and a structure PETSc refuses names its line too. */
Test(deck, yaml_problems_name_their_line)
{
  static const struct {
    const char *yaml, *want;
  } cases[] = {
      {"N: 32\ndt: [1, 2\nsteps: 3\n", "YAML error at line 3, column 6: did not find expected ','"},
      {"N: 32\n  dt: 1\n", "YAML error at line 2, column 5: mapping values are not allowed"},
      {"label: \"open\nN: 2\n", "YAML error at line 3, column 1: found unexpected end of stream"},
      {"N: 32\n---\n- N\n- dt\n",
       "line 3: expected a map of `key: value` lines here, found a list"},
      {"N: 32\nlist:\n  - {a: 1, b: 2}\n",
       "line 3: an item of list 'list' is a map of several keys"},
      {"N: 32\nlist:\n  - [1, 2]\n", "line 3: an item of list 'list' is a list"},
      {"N: 32\n[a, b]: 1\n", "line 2: a key must be a plain name, found a list"},
      {"N: 32\n<<: 3\n", "line 2: expected a map of `key: value` lines here, found a value"},
  };
  rw_deck base = NULL; /* keeps PETSc initialised between the cases */
  RW_TEST_OK(make_deck(&base, NULL, NULL));
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    rw_deck deck = NULL;
    int ierr = make_deck(&deck, cases[i].yaml, NULL);
    const char *msg = ierr ? rw_error_message() : "(accepted)";
    cr_expect(ierr == RW_ERR_DECK && strstr(msg, "the default deck") && strstr(msg, cases[i].want),
              "case %zu: expected \"%s\", got: %s", i, cases[i].want, msg);
    cr_expect(!strstr(msg, "YAML parser loading error") && !strstr(msg, "Unsupported YAML"),
              "case %zu: PETSc's message instead of ours: %s", i, msg);
    rw_deck_destroy(&deck);
    rw_error_clear();
  }
  RW_TEST_OK(rw_deck_destroy(&base));
}

Test(deck, yaml_tab_indent_hint)
{
  rw_deck deck = NULL;
  expect_deck_error(make_deck(&deck, NULL, deck_path("tab_indent.yaml"), NULL),
                    "is not a valid deck", "Line 2 is indented with a tab");
}

/* A deck file with a NUL byte is not text: refused naming the file, the offset and the line,
 * not read up to the NUL (which dropped the rest, unknown keys included, silently). */
Test(deck, nul_byte_in_file_refused)
{
  rw_deck deck = NULL, base = NULL;
  RW_TEST_OK(make_deck(&base, NULL, NULL)); /* keeps PETSc up for the decks below */
  char want[4200];
  const char *path = deck_path("nul_byte.yaml");
  snprintf(want, sizeof want, "deck file '%s' holds a NUL byte at offset 88 (line 3)", path);
  expect_deck_error(make_deck(&deck, NULL, path, NULL), want, "a deck is ASCII or UTF-8 text");
  cr_expect(!strstr(rw_error_message(), "unknown key"), "%s", rw_error_message());
  cr_assert_null(deck);
  /* A plain options file, also through -options_file. */
  path = deck_path("nul_byte.opts");
  snprintf(want, sizeof want, "deck file '%s' holds a NUL byte at offset 87 (line 3)", path);
  expect_deck_error(make_deck(&deck, NULL, path, NULL), want, NULL);
  expect_deck_error(make_deck(&deck, NULL, "-options_file", path, NULL), want, NULL);
  RW_TEST_OK(rw_deck_destroy(&base));
}

/* UTF-16 (NULs in every ASCII character) was read as an empty deck. */
Test(deck, utf16_file_refused)
{
  rw_deck deck = NULL;
  char want[4200];
  const char *path = deck_path("utf16.yaml");
  snprintf(want, sizeof want, "deck file '%s' holds a NUL byte at offset 3 (line 1)", path);
  expect_deck_error(make_deck(&deck, NULL, path, NULL), want, "UTF-16 byte-order mark");
}

/* Values are never truncated: a number longer than RW_DECK_MAX_VALUE was cut to its first
 * 255 bytes and read ("1" and spaces: 1), an array entry to 127. */
Test(deck, long_value_refused_not_truncated)
{
  rw_deck deck = NULL, base = NULL;
  RW_TEST_OK(make_deck(&base, NULL, NULL)); /* keeps PETSc up for the decks below */
  char val[512], arr[400];
  snprintf(val, sizeof val, "1%300sjunk", "");
  snprintf(arr, sizeof arr, "1, 2%280s3", "");
  int ierr = make_deck(&deck, NULL, "-steps", val, "-dt", val, "-weights", arr, "-verbose", val,
                       "-stepper", val, NULL);
  expect_deck_error(ierr, "steps = '1      ",
                    "(from command line) is 305 bytes long; an integer value has at most 255");
  cr_expect(strstr(rw_error_message(), "(from command line) is 305 bytes long; a real value has at "
                                       "most 255"),
            "%s", rw_error_message());
  cr_expect(strstr(rw_error_message(), "(from command line) is 305 bytes long; a bool value has at "
                                       "most 255"),
            "%s", rw_error_message());
  cr_expect(strstr(rw_error_message(), "(from command line) is 305 bytes long; a choice value has "
                                       "at most 255"),
            "%s", rw_error_message());
  cr_expect(strstr(rw_error_message(), "entry 2 '2   "), "%s", rw_error_message());
  cr_expect(strstr(rw_error_message(), "is 282 bytes long; an entry has at most 255"), "%s",
            rw_error_message());
  cr_expect(strstr(rw_error_message(), "5 problems in the input deck"), "%s", rw_error_message());
  /* Leading and trailing white space does not count. */
  snprintf(val, sizeof val, "%200s7%200s", "", "");
  RW_TEST_OK(make_deck(&deck, NULL, "-steps", val, NULL));
  long steps = 0;
  RW_TEST_OK(rw_deck_get_int(deck, "steps", &steps));
  cr_expect_eq(steps, 7);
  RW_TEST_OK(rw_deck_destroy(&deck));
  RW_TEST_OK(rw_deck_destroy(&base));
}

/* A string value has at most RW_DECK_MAX_STRING bytes (refused at creation naming the key and
 * the limit); a value longer than a caller's buffer is a deck error naming the key, its source
 * and the buffer's limit, not an internal error. */
Test(deck, long_string_value)
{
  rw_deck deck = NULL, keep = NULL, base = NULL;
  RW_TEST_OK(make_deck(&base, NULL, NULL)); /* keeps PETSc up for the decks below */
  static char path[RW_DECK_MAX_STRING + 2];
  memset(path, 'a', RW_DECK_MAX_STRING + 1);
  path[RW_DECK_MAX_STRING + 1] = '\0';
  expect_deck_error(make_deck(&deck, NULL, "-output", path, NULL), "output = 'aaaa",
                    "...' (from command line) is 4096 bytes long; a string value has at most 4095");
  path[RW_DECK_MAX_STRING] = '\0'; /* 4095 bytes: accepted */
  RW_TEST_OK(make_deck(&keep, NULL, "-output", path, NULL));
  static char out[RW_DECK_MAX_STRING + 1];
  RW_TEST_OK(rw_deck_get_string(keep, "output", out, sizeof out));
  cr_expect_eq(strlen(out), RW_DECK_MAX_STRING);
  char small[64] = "junk";
  cr_expect_eq(rw_deck_get_string(keep, "output", small, sizeof small), RW_ERR_DECK);
  cr_expect(strstr(rw_error_message(), "output = 'aaaa"), "%s", rw_error_message());
  cr_expect(strstr(rw_error_message(),
                   "...' (from command line) is 4095 bytes long; this key takes at most 63"),
            "%s", rw_error_message());
  cr_expect_str_eq(small, "");
  rw_error_clear();
  RW_TEST_OK(rw_deck_destroy(&keep));
  RW_TEST_OK(rw_deck_destroy(&base));
}

Test(deck, plain_file_bad_lines)
{
  rw_deck deck = NULL;
  const char *path = deck_path("bad_line.opts");
  char want1[4200], want2[4200];
  snprintf(want1, sizeof want1, "deck file '%s' line 2: expected '-key value', found 'dt'", path);
  snprintf(want2, sizeof want2, "deck file '%s' line 3: one option per line", path);
  expect_deck_error(make_deck(&deck, NULL, path, NULL), want1, want2);
}

Test(deck, repeated_key_in_yaml_names_both_lines)
{
  rw_deck deck = NULL;
  char want[4200];
  const char *path = deck_path("repeat_key.yaml");
  snprintf(want, sizeof want,
           "deck file '%s' sets key 'steps' twice: on line 3 and again on line 5", path);
  expect_deck_error(make_deck(&deck, default_yaml, path, NULL), want, NULL);
  cr_assert_null(deck);
}

Test(deck, repeated_key_after_flattening)
{
  rw_deck deck = NULL;
  char want[4200];
  const char *path = deck_path("repeat_nested.yaml");
  snprintf(want, sizeof want,
           "deck file '%s' sets key 'checkpoint_ram' twice: on line 6 and again on line 8", path);
  expect_deck_error(make_deck(&deck, NULL, path, NULL), want, "nested map join with '_'");
}

Test(deck, repeated_key_in_plain_file)
{
  rw_deck deck = NULL;
  char want[4200];
  const char *path = deck_path("repeat_key.opts");
  snprintf(want, sizeof want,
           "deck file '%s' sets key 'STEPS' twice: on line 3 and again on line 5", path);
  size_t mem0 = rw_mem_current();
  expect_deck_error(make_deck(&deck, NULL, path, NULL), want, NULL);
  cr_expect_eq(rw_mem_current(), mem0, "leaked %zu bytes", rw_mem_current() - mem0);
}

/* The YAML key scanner on the constructs decks may use: each text sets `key` on lines l1 and
 * l2 (key NULL: no key is set twice). PETSc must accept every text, or the case tests nothing. */
Test(deck, repeated_key_yaml_constructs)
{
  static const struct {
    const char *yaml, *key;
    int l1, l2;
  } cases[] = {
      {"dt: 1\ntf: 2\ndt: 3\n", "dt", 1, 3},
      {"checkpoint:\n  ram: 1GiB\n  disk: 0\ncheckpoint_ram: 2GiB\n", "checkpoint_ram", 2, 4},
      {"checkpoint: {disk: 0,\n  ram: 1GiB}\n\ncheckpoint: {ram: 2GiB}\n", "checkpoint_ram", 2, 4},
      {"checkpoint:\n    ram: 1GiB\nverbose: yes\ncheckpoint:\n    disk: 0\n", NULL, 0, 0},
      {"# dt: 1\ndt: 2 # dt: 3\nlabel: 'a: b\n  dt: c'\ntf: 1\n", NULL, 0, 0},
      {"weights: [1,\n  2]\ndt: 1\nlabel: |\n  dt: 2\n  dt: 3\ntf: 1\n", NULL, 0, 0},
      {"weights:\n  - 1\n  - 2\ndt: 1\n", NULL, 0, 0},
      {"weights:\n- 1\n- 2\nweights: [3]\n", "weights", 1, 4},
      {"---\ndt: 1\n...\n---\ndt: 2\n", "dt", 2, 5},
      {"\"dt\": 1\nsteps: 2\nDT: 3\n", "DT", 1, 3},
      {"$$defaults:\n  dt: 1\ndt: 2\n", NULL, 0, 0},
      {"<<: {dt: 1}\ndt: 2\n", "dt", 1, 2},
      {"label: x\noutput: >\n  folded\n  text\nlabel:\n", "label", 1, 5},
      {"{dt: 1, steps: 2,\n dt: 3}\n", "dt", 1, 2},
      {"checkpoint:\n  ram:\n  disk: 1\nverbose: on\n", NULL, 0, 0},
  };
  rw_deck base = NULL; /* keeps PETSc initialised between the cases */
  RW_TEST_OK(make_deck(&base, NULL, NULL));
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    rw_deck deck = NULL;
    int ierr = make_deck(&deck, cases[i].yaml, NULL);
    const char *msg = ierr ? rw_error_message() : "";
    cr_expect(!strstr(msg, "not a valid deck"), "case %zu: PETSc refused the text: %s", i, msg);
    if (cases[i].key) {
      char want[256];
      snprintf(want, sizeof want,
               "the default deck sets key '%s' twice: on line %d and again on line %d",
               cases[i].key, cases[i].l1, cases[i].l2);
      cr_expect(ierr == RW_ERR_DECK && strstr(msg, want), "case %zu: expected \"%s\", got: %s", i,
                want, msg);
    } else {
      cr_expect(!strstr(msg, "twice"), "case %zu: no key is set twice, got: %s", i, msg);
    }
    rw_deck_destroy(&deck);
    rw_error_clear();
  }
  RW_TEST_OK(rw_deck_destroy(&base));
}

/* Every deck shipped with the apps, their embedded defaults and the good test decks set each
 * key once: none of them may be refused as repeating a key. */
Test(deck, shipped_decks_set_each_key_once)
{
  static const char *patterns[] = {"apps/*/decks/*", "apps/*/default.yaml", "tests/decks/good.*"};
  const char *root = getenv("REWIND_SOURCE_DIR");
  rw_deck base = NULL;
  int checked = 0;
  RW_TEST_OK(make_deck(&base, NULL, NULL));
  for (size_t k = 0; k < sizeof patterns / sizeof patterns[0]; k++) {
    char pat[4200];
    glob_t g;
    snprintf(pat, sizeof pat, "%s/%s", root ? root : ".", patterns[k]);
    if (glob(pat, 0, NULL, &g) != 0) continue;
    for (size_t i = 0; i < g.gl_pathc; i++) {
      rw_deck deck = NULL;
      int ierr = make_deck(&deck, NULL, g.gl_pathv[i], NULL);
      const char *msg = ierr ? rw_error_message() : "";
      cr_expect(!strstr(msg, "twice") && !strstr(msg, "not a valid deck"), "%s: %s", g.gl_pathv[i],
                msg);
      rw_deck_destroy(&deck);
      rw_error_clear();
      checked++;
    }
    globfree(&g);
  }
  cr_expect_geq(checked, 15, "only %d decks found under %s", checked, root ? root : ".");
  RW_TEST_OK(rw_deck_destroy(&base));
}

Test(deck, help_flag)
{
  rw_deck deck = NULL;
  /* -help succeeds even with problems in the input, and lists them after the keys. */
  RW_TEST_OK(make_deck(&deck, default_yaml, "-help", "-dtt", "1", "-tf", "3", NULL));
  cr_assert_eq(rw_deck_help_requested(deck), 1);
  FILE *f = tmpfile();
  cr_assert(f);
  rw_deck_print_help(deck, f);
  long len = ftell(f);
  cr_assert(len > 0);
  char *text = calloc((size_t)len + 1, 1);
  rewind(f);
  cr_assert_eq(fread(text, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  cr_expect(strstr(text, "Usage: app [deck.yaml|deck.opts] [-key value ...]"), "%s", text);
  cr_expect(strstr(text, "-checkpoint_ram"), "%s", text);
  cr_expect(strstr(text, "RAM budget for checkpoints"), "%s", text);
  cr_expect(strstr(text, "euler|heun|rk4"), "%s", text);
  cr_expect(strstr(text, "> 0"), "%s", text);
  cr_expect(strstr(text, "now: 3 (from command line)"), "%s", text);
  cr_expect(strstr(text, "unknown key 'dtt' (from command line); did you mean 'dt'?"), "%s", text);
  free(text);
  RW_TEST_OK(rw_deck_destroy(&deck));
}

Test(deck, help_variants)
{
  rw_deck deck = NULL;
  /* "-h" with a deck file after it: the file is not taken as the value of -h. */
  RW_TEST_OK(make_deck(&deck, NULL, "-h", NULL));
  cr_expect_eq(rw_deck_help_requested(deck), 1);
  RW_TEST_OK(rw_deck_destroy(&deck));
}

Test(deck, help_double_dash)
{
  rw_deck deck = NULL;
  RW_TEST_OK(make_deck(&deck, NULL, deck_path("good.yaml"), "--help", NULL));
  cr_expect_eq(rw_deck_help_requested(deck), 1);
  RW_TEST_OK(rw_deck_destroy(&deck));
}

Test(deck, to_yaml_round_trip)
{
  rw_deck a = NULL, b = NULL;
  size_t mem0 = rw_mem_current();
  RW_TEST_OK(make_deck(&a, default_yaml, deck_path("good.yaml"), "-dt", "0.1", "-output",
                       "it's: #odd", "-label", "run 7", "-weights", "0.1,1e-3", NULL));
  size_t need = 0;
  RW_TEST_OK(rw_deck_yaml_length(a, &need));
  char small[8];
  cr_expect_eq(rw_deck_to_yaml(a, small, sizeof small), RW_ERR_ARG);
  rw_error_clear();
  char *yaml = calloc(need, 1);
  RW_TEST_OK(rw_deck_to_yaml(a, yaml, need));
  cr_expect_eq(strlen(yaml) + 1, need);
  cr_expect(strstr(yaml, "dt: 0.1\n"), "%s", yaml);
  cr_expect(strstr(yaml, "checkpoint_ram: 256 MiB\n"), "%s", yaml);
  cr_expect(strstr(yaml, "verbose: true\n"), "%s", yaml);

  char path[256];
  snprintf(path, sizeof path, "/tmp/rw_test_deck_%ld.yaml", (long)getpid());
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fputs(yaml, f);
  fclose(f);
  /* The first deck stays alive: PETSc cannot start again after the last deck is gone. */
  RW_TEST_OK(make_deck(&b, NULL, path, NULL));
  for (int k = 0; k < NKEYS; k++) {
    char va[256], vb[256];
    int sa = 0, sb = 0;
    RW_TEST_OK(rw_deck_is_set(a, keys[k].name, &sa));
    RW_TEST_OK(rw_deck_is_set(b, keys[k].name, &sb));
    cr_expect_eq(sa, sb, "key %s", keys[k].name);
    if (keys[k].type == RW_KEY_REAL_ARRAY) {
      double wa[3], wb[3];
      int na = 3, nb = 3;
      RW_TEST_OK(rw_deck_get_real_array(a, keys[k].name, wa, &na));
      RW_TEST_OK(rw_deck_get_real_array(b, keys[k].name, wb, &nb));
      cr_expect_eq(na, nb);
      for (int i = 0; i < na && i < nb; i++)
        cr_expect_eq(wa[i], wb[i], "%s[%d]", keys[k].name, i);
      continue;
    }
    RW_TEST_OK(rw_deck_get_string(a, keys[k].name, va, sizeof va));
    RW_TEST_OK(rw_deck_get_string(b, keys[k].name, vb, sizeof vb));
    if (keys[k].type == RW_KEY_BOOL) {
      int ba = 0, bb = 0;
      RW_TEST_OK(rw_deck_get_bool(a, keys[k].name, &ba));
      RW_TEST_OK(rw_deck_get_bool(b, keys[k].name, &bb));
      cr_expect_eq(ba, bb, "key %s", keys[k].name);
    } else {
      cr_expect_str_eq(va, vb, "key %s: '%s' became '%s'", keys[k].name, va, vb);
    }
  }
  double dta = 0, dtb = 0;
  RW_TEST_OK(rw_deck_get_real(a, "dt", &dta));
  RW_TEST_OK(rw_deck_get_real(b, "dt", &dtb));
  cr_expect_eq(dta, dtb);
  size_t ra = 0, rb = 0;
  RW_TEST_OK(rw_deck_get_size(a, "checkpoint_ram", &ra));
  RW_TEST_OK(rw_deck_get_size(b, "checkpoint_ram", &rb));
  cr_expect_eq(ra, rb);
  remove(path);
  free(yaml);
  RW_TEST_OK(rw_deck_destroy(&b));
  RW_TEST_OK(rw_deck_destroy(&a));
  cr_expect_eq(rw_mem_current(), mem0, "decks leaked %zu bytes", rw_mem_current() - mem0);
}

Test(deck, no_restart_after_finalize)
{
  rw_deck deck = NULL;
  RW_TEST_OK(make_deck(&deck, NULL, NULL));
  RW_TEST_OK(rw_deck_destroy(&deck));
  cr_expect_eq(make_deck(&deck, NULL, NULL), RW_ERR_PETSC);
  cr_expect(strstr(rw_error_message(), "cannot be initialised again"), "%s", rw_error_message());
}

Test(deck, bad_table)
{
  rw_deck deck = NULL;
  const rw_deck_key dup[] = {{"a", RW_KEY_REAL, "1", NULL, 0, 0, 0, NULL, 0, "a"},
                             {"A", RW_KEY_INT, "1", NULL, 0, 0, 0, NULL, 0, "a again"}};
  char *argv[] = {"app", NULL};
  cr_expect_eq(rw_deck_create(MPI_COMM_WORLD, "app", dup, 2, NULL, 1, argv, &deck), RW_ERR_ARG);
  cr_expect(strstr(rw_error_message(), "appears twice"), "%s", rw_error_message());
  const rw_deck_key noenum[] = {{"m", RW_KEY_ENUM, "x", NULL, 0, 0, 0, NULL, 0, "m"}};
  cr_expect_eq(rw_deck_create(MPI_COMM_WORLD, "app", noenum, 1, NULL, 1, argv, &deck), RW_ERR_ARG);
}

Test(deck, size_parsing)
{
  static const struct {
    const char *text;
    size_t bytes;
  } good[] = {
      {"512MiB", 536870912},
      {"8GiB", 8589934592ULL},
      {"1.5GB", 1500000000},
      {"4096", 4096},
      {"4096B", 4096},
      {"100 kB", 100000},
      {"100KB", 100000},
      {"100 kb", 100000},
      {"1KiB", 1024},
      {"2 kib", 2048},
      {"1.5KiB", 1536},
      {"0", 0},
      {" 7 MB ", 7000000},
      {"3 bytes", 3},
      {"2TiB", 2199023255552ULL},
      {"1TB", 1000000000000ULL},
      {".5MiB", 524288},
      {"1e3", 1000},
      {"18446744073709551615", 18446744073709551615ULL},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    size_t b = 1;
    int ierr = rw_parse_size(good[i].text, &b);
    cr_expect_eq(ierr, 0, "'%s': %s", good[i].text, rw_error_message());
    cr_expect_eq(b, good[i].bytes, "'%s' gave %zu, want %zu", good[i].text, b, good[i].bytes);
  }
  static const struct {
    const char *text, *why;
  } bad[] = {
      {"", "empty size"},
      {"   ", "empty size"},
      {"-1", "cannot be negative"},
      {"-1MiB", "cannot be negative"},
      {"abc", "not a size"},
      {"MiB", "not a size"},
      {"12 parsecs", "unknown unit 'parsecs'; use B, kB, MB, GB, TB, KiB, MiB, GiB, TiB"},
      {"1G", "unit 'G' is ambiguous; use GB (powers of 1000) or GiB"},
      {"1k", "use kB (powers of 1000) or KiB"},
      {"18446744073709551616", "too large"},
      {"99999999999999999999999", "too large"},
      {"20000000TiB", "too large"},
      {"1e30", "too large"},
      {"0.5", "not a whole number of bytes"},
      {"1.5B", "not a whole number of bytes"},
      {"1..2", "unknown unit '.2'"},
      {"0x10", "unknown unit 'x10'"},
      {"5 MiB x", "unknown unit 'MiB x'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    size_t b = 77;
    rw_error_clear();
    int ierr = rw_parse_size(bad[i].text, &b);
    cr_expect_eq(ierr, RW_ERR_DECK, "'%s' was accepted as %zu", bad[i].text, b);
    cr_expect_eq(b, 77, "'%s' changed the output", bad[i].text);
    cr_expect(strstr(rw_error_message(), bad[i].why), "'%s': %s", bad[i].text, rw_error_message());
  }
  cr_expect_eq(rw_parse_size(NULL, NULL), RW_ERR_ARG);
  rw_error_clear();
}

/* rw_deck_user_set: only a deck file or the command line count as the user's; the key table's
 * default, the embedded default deck, a key with no value and an unknown key do not. */
Test(deck, user_set_by_source)
{
  rw_deck deck = NULL;
  RW_TEST_OK(make_deck(&deck, default_yaml, "-steps", "7", NULL));
  cr_expect_eq(rw_deck_user_set(deck, "steps"), 1);   /* command line */
  cr_expect_eq(rw_deck_user_set(deck, "dt"), 0);      /* the default deck */
  cr_expect_eq(rw_deck_user_set(deck, "stepper"), 0); /* the table */
  cr_expect_eq(rw_deck_user_set(deck, "label"), 0);   /* no value */
  cr_expect_eq(rw_deck_user_set(deck, "nokey"), 0);   /* unknown */
  cr_expect_eq(rw_deck_user_set(NULL, "steps"), 0);
  RW_TEST_OK(rw_deck_destroy(&deck));
}
