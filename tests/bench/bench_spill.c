/* Benchmark: a run whose checkpoints spill to disk against the all-RAM run with the same
 * total number of slots (issue 7, "Figures").
 *
 * Gray-Scott 2-D on an N x N periodic grid (the ex5adj set-up of rw_grayscott.h; the state is
 * 16 N^2 bytes: 64 MiB per rank at N = 2048 on one rank), RK4, l = --steps steps. In ONE
 * run it measures, after an untimed two-step warm-up:
 *   1. ram:   binomial checkpointing with c_ram + c_disk RAM slots;
 *   2. spill: the two-level schedule with c_ram RAM slots and c_disk disk slots in --dir,
 *             with the disk costs measured at start-up (as checkpoint_write_cost: auto does)
 *             or given (--write-cost, --read-cost in steps);
 * and prints the wall time of each (max over ranks), their ratio spill / ram (the goal is
 * <= 1.25 where the disk's bandwidth allows it), the schedule of each (advances, disk writes
 * and reads, the costs used), the disk traffic in bytes and its time in the store's I/O
 * thread, and what the disk allows: the bandwidth the probe measured, the time one step
 * takes, and the disk time per step the spilled schedule needs if nothing overlapped.
 * Checked (exit 1 when broken): the two runs give the same J, dJ/dp and dJ/dy0 bit for bit.
 *
 *   mpiexec -n 1 tests/bench/bench_spill --n 2048 --steps 100 --ram-slots 3 --disk-slots 8
 *           --dir /scratch
 * Output: a table for people and one JSON line ("BENCH_JSON {...}") for scripts. Exit
 * status: 0; 1 (a check failed, or an error); 2 (bad command line). */
#include "bench_util.h"
#include "rewind/rw_adjoint.h"
#include "rewind/rw_grayscott.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  long n, steps;
  int ram_slots, disk_slots;
  double write_cost, read_cost; /* < 0: measured */
  const char *dir;
} spill_opts;

typedef struct {
  double t, J, dJdp[8];
  N_Vector dJdy0;
  rw_adjoint_stats st;
} spill_run;

static int run_one(rw_problem prob, rw_stepper st, N_Vector y0, const rw_adjoint_options *opt,
                   N_Vector y, spill_run *r)
{
  rw_vec_copy(y0, y);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  RW_CALL(rw_adjoint_solve(prob, st, opt, y, &r->J, r->dJdp, r->dJdy0, &r->st));
  double t = MPI_Wtime() - t0;
  MPI_Allreduce(&t, &r->t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return 0;
}

static int bench(const spill_opts *o, int *failed)
{
  int ierr = 0;
  rw_context ctx = NULL;
  rw_problem prob = NULL;
  rw_stepper st = NULL;
  N_Vector y0 = NULL, y = NULL;
  spill_run R[2];
  memset(R, 0, sizeof R);
  RW_CALL(rw_context_create(MPI_COMM_WORLD, &ctx));
  int rank = rw_context_rank(ctx), size = rw_context_size(ctx);
  rw_gs_config cfg;
  rw_gs_config_default(&cfg);
  cfg.dim = 2;
  cfg.n = o->n;
  RW_TRY(rw_gs_problem_create(ctx, &cfg, &prob));
  RW_TRY(rw_problem_new_state(prob, &y0));
  RW_TRY(rw_problem_new_state(prob, &y));
  RW_TRY(rw_gs_initial_state(prob, y0));
  for (int i = 0; i < 2; i++)
    RW_TRY(rw_problem_new_state(prob, &R[i].dJdy0));
  const rw_tableau *tab = rw_tableau_find("rk4");
  RW_TRY(rw_stepper_create_erk(prob, tab, &st));
  double r = 128.0 / (double)cfg.n;
  rw_adjoint_options opt;
  rw_adjoint_options_default(&opt);
  opt.dt = 0.5 * fmin(1.0, r * r);
  opt.tf = (double)o->steps * opt.dt;
  opt.mode = RW_ADJOINT_CHECKPOINT;
  opt.schedule = RW_SCHEDULE_BINOMIAL;
  { /* warm-up: first touch, MPI connections */
    rw_adjoint_options wo = opt;
    double Jw = 0.0;
    wo.mode = RW_ADJOINT_STORE;
    wo.tf = 2.0 * opt.dt;
    rw_vec_copy(y0, y);
    RW_TRY(rw_forward_solve(prob, st, &wo, y, &Jw, NULL));
  }
  rw_adjoint_options ram = opt, spill = opt;
  ram.ram_slots = o->ram_slots + o->disk_slots;
  spill.ram_slots = o->ram_slots;
  spill.disk_slots = o->disk_slots;
  spill.disk_dir = o->dir;
  spill.run_id = "bench-spill";
  spill.write_cost = o->write_cost;
  spill.read_cost = o->read_cost;
  RW_TRY(run_one(prob, st, y0, &ram, y, &R[0]));
  RW_TRY(run_one(prob, st, y0, &spill, y, &R[1]));
  int np = rw_problem_nparams(prob);
  int same = memcmp(&R[0].J, &R[1].J, sizeof R[0].J) == 0 &&
             memcmp(R[0].dJdp, R[1].dJdp, (size_t)np * sizeof(double)) == 0;
  sunrealtype *a = N_VGetArrayPointer(R[0].dJdy0), *b = N_VGetArrayPointer(R[1].dJdy0);
  same = same && memcmp(a, b, (size_t)rw_vec_local_length(y) * sizeof *a) == 0;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  *failed = !same;
  const rw_adjoint_stats *s0 = &R[0].st, *s1 = &R[1].st;
  size_t snap = max_bytes(rw_context_comm(ctx), s1->snapshot_bytes);
  double io[2] = {s1->time_disk_write, s1->time_disk_read};
  MPI_Allreduce(MPI_IN_PLACE, io, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  double step = R[0].t / (double)(s0->advances + s0->steps); /* seconds per step evaluation */
  double wbw = s1->disk_writes ? (double)s1->disk_writes * (double)snap / io[0] : 0.0;
  double rbw = s1->disk_reads ? (double)s1->disk_reads * (double)snap / io[1] : 0.0;
  if (rank == 0) {
    printf("bench_spill: Gray-Scott %ld x %ld on %d rank(s), RK4, %ld steps, snapshot %.1f MiB "
           "per rank; all-RAM c = %d against RAM %d + disk %d in %s\n",
           o->n, o->n, size, s0->steps, mib(snap), ram.ram_slots, o->ram_slots, o->disk_slots,
           o->dir);
    printf("%-8s %9s %9s %9s %8s %8s %7s %7s %10s %10s\n", "run", "time [s]", "fwd [s]", "bwd [s]",
           "advances", "recomp", "writes", "reads", "write cost", "read cost");
    for (int i = 0; i < 2; i++)
      printf("%-8s %9.3f %9.3f %9.3f %8ld %8ld %7ld %7ld %10.3g %10.3g\n", i ? "spill" : "ram",
             R[i].t, R[i].st.time_forward, R[i].st.time_backward, R[i].st.advances,
             R[i].st.recomputed_steps, R[i].st.disk_writes, R[i].st.disk_reads, R[i].st.write_cost,
             R[i].st.read_cost);
    printf("spill / ram wall time: %.3f (goal <= 1.25 where the disk allows it)\n",
           R[1].t / R[0].t);
    printf("disk: %ld writes, %ld reads of %.1f MiB; I/O thread %.3f s writing (%.2f GB/s), "
           "%.3f s reading (%.2f GB/s); costs %s: write %.3g, read %.3g steps\n",
           s1->disk_writes, s1->disk_reads, mib(snap), io[0], wbw / 1e9, io[1], rbw / 1e9,
           s1->costs_measured ? "measured" : "given", s1->write_cost, s1->read_cost);
    printf("what the disk allows: one step takes %.4f s; the spilled schedule's disk time is "
           "%.3f s, %.1f%% of the all-RAM run (upper bound of the slowdown if none of it "
           "overlapped); gradients %s\n",
           step, io[0] + io[1], 100.0 * (io[0] + io[1]) / R[0].t,
           same ? "equal bit for bit" : "DIFFER");
    printf("BENCH_JSON {\"bench\":\"spill\",\"ranks\":%d,\"n\":%ld,\"steps\":%ld,"
           "\"snapshot_bytes\":%zu,\"ram_slots\":%d,\"disk_slots\":%d,\"time_ram\":%.6e,"
           "\"time_spill\":%.6e,\"ratio\":%.6f,\"advances_ram\":%ld,\"advances_spill\":%ld,"
           "\"disk_writes\":%ld,\"disk_reads\":%ld,\"write_cost\":%.6g,\"read_cost\":%.6g,"
           "\"costs_measured\":%s,\"io_write_s\":%.6e,\"io_read_s\":%.6e,\"step_s\":%.6e,"
           "\"gradients_match\":%s}\n",
           size, o->n, s0->steps, snap, o->ram_slots, o->disk_slots, R[0].t, R[1].t,
           R[1].t / R[0].t, s0->advances, s1->advances, s1->disk_writes, s1->disk_reads,
           s1->write_cost, s1->read_cost, s1->costs_measured ? "true" : "false", io[0], io[1], step,
           same ? "true" : "false");
    fflush(stdout);
  }
cleanup:
  for (int i = 0; i < 2; i++)
    rw_vec_destroy(&R[i].dJdy0);
  rw_vec_destroy(&y);
  rw_vec_destroy(&y0);
  rw_stepper_destroy(&st);
  rw_problem_destroy(&prob);
  rw_context_destroy(&ctx);
  return ierr;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  spill_opts o = {2048, 100, 3, 8, -1.0, -1.0, "."};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long lv = 0;
    int bad = !v;
    if (!bad && !strcmp(a, "--n"))
      bad = parse_long(v, 8, &o.n);
    else if (!bad && !strcmp(a, "--steps"))
      bad = parse_long(v, 2, &o.steps);
    else if (!bad && !strcmp(a, "--ram-slots"))
      bad = parse_long(v, 1, &lv) || lv > 100000, o.ram_slots = (int)lv;
    else if (!bad && !strcmp(a, "--disk-slots"))
      bad = parse_long(v, 1, &lv) || lv > 100000, o.disk_slots = (int)lv;
    else if (!bad && !strcmp(a, "--write-cost"))
      bad = parse_double(v, &o.write_cost) || o.write_cost < 0.0;
    else if (!bad && !strcmp(a, "--read-cost"))
      bad = parse_double(v, &o.read_cost) || o.read_cost < 0.0;
    else if (!bad && !strcmp(a, "--dir"))
      o.dir = v;
    else
      bad = 1;
    if (bad) {
      if (rank == 0)
        fprintf(stderr,
                "usage: %s [--n N] [--steps L] [--ram-slots C] [--disk-slots D] [--dir DIR]\n"
                "          [--write-cost X --read-cost Y]   (bad or missing value for '%s')\n",
                argv[0], a);
      MPI_Finalize();
      return 2;
    }
    i++;
  }
  int failed = 0;
  int ierr = bench(&o, &failed);
  if (ierr) fprintf(stderr, "bench_spill: error %d: %s\n", ierr, rw_error_message());
  MPI_Finalize();
  return ierr || failed ? 1 : 0;
}
