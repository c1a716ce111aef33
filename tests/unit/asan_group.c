/* AddressSanitizer builds only: the blocks of a group (rw_calloc_whole_many) are fenced by
 * hand, so that running off a block or reading one after rw_free is reported as it is for a
 * block of its own. argv[1]: 0 writes a block's last entry (no report), 1 the entry one past
 * it, 2 reads a block after it was freed. Prints "no report" when the access went through. */
#include "rewind/rw_context.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
  enum { NB = 40, M = 12801 }; /* 40 blocks of 100 KiB + 8 bytes: one group of 4 MiB */
  double *p[NB];
  if (argc < 2 || rw_calloc_whole_many(NB, M, sizeof(double), "asan group", (void **)p)) return 2;
  const int mode = atoi(argv[1]);
  volatile double *q = p[3];
  if (mode == 0) q[M - 1] = 1.0;
  if (mode == 1) q[M] = 1.0;
  if (mode == 2) {
    volatile double *u = p[5];
    rw_free(&p[5]);
    printf("%g\n", u[0]);
  }
  printf("no report\n");
  for (int i = 0; i < NB; i++)
    rw_free(&p[i]);
  return 0;
}
