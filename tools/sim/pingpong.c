/* pingpong.c: point-to-point numbers between rank 0 and rank 1, to calibrate the SimGrid
 * platforms in tools/sim/platforms against the real emulated cluster (and to check the
 * platform reproduces them). Builds unchanged with mpicc (real Open MPI) and smpicc (SMPI).
 *   latency: half the round trip of an 8-byte ping-pong, median of REPS (after a warm-up)
 *   oneway:  MPI_Send of BYTES from 0 to 1, acknowledged by a 1-byte reply; time on rank 0
 *   bidir:   MPI_Sendrecv of BYTES both ways at once
 * Usage: pingpong [BYTES=67108864] [REPS=5]   (2 ranks; more ranks idle) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t bytes = argc > 1 ? (size_t)atoll(argv[1]) : 67108864;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  if (size < 2 || reps < 1) {
    if (rank == 0) fprintf(stderr, "pingpong: needs 2 ranks and REPS >= 1\n");
    MPI_Finalize();
    return 2;
  }
  char *a = calloc(bytes, 1), *b = calloc(bytes, 1);
  char small[8] = {0};
  int nlat = 1000;
  double *t = calloc((size_t)(nlat > reps ? nlat : reps), sizeof *t);
  int peer = 1 - rank;
  if (rank <= 1) {
    for (int i = -100; i < nlat; i++) { /* 100 warm-up round trips */
      double t0 = MPI_Wtime();
      if (rank == 0) {
        MPI_Send(small, 8, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
        MPI_Recv(small, 8, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(small, 8, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(small, 8, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
      }
      if (i >= 0) t[i] = (MPI_Wtime() - t0) / 2;
    }
    qsort(t, (size_t)nlat, sizeof *t, cmp);
    double lat = t[nlat / 2], latmin = t[0];
    double ow[64], bd[64];
    int r = reps > 64 ? 64 : reps;
    for (int i = 0; i < r; i++) {
      double t0 = MPI_Wtime();
      if (rank == 0) {
        MPI_Send(a, (int)bytes, MPI_CHAR, peer, 2, MPI_COMM_WORLD);
        MPI_Recv(small, 1, MPI_CHAR, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(a, (int)bytes, MPI_CHAR, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(small, 1, MPI_CHAR, peer, 3, MPI_COMM_WORLD);
      }
      ow[i] = MPI_Wtime() - t0;
    }
    for (int i = 0; i < r; i++) {
      double t0 = MPI_Wtime();
      MPI_Sendrecv(a, (int)bytes, MPI_CHAR, peer, 4, b, (int)bytes, MPI_CHAR, peer, 4, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
      bd[i] = MPI_Wtime() - t0;
    }
    qsort(ow, (size_t)r, sizeof *ow, cmp);
    qsort(bd, (size_t)r, sizeof *bd, cmp);
    if (rank == 0) {
      char p0[MPI_MAX_PROCESSOR_NAME], p1[MPI_MAX_PROCESSOR_NAME];
      int l;
      MPI_Get_processor_name(p0, &l);
      MPI_Recv(p1, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      printf("pingpong %s -> %s: latency median %.2f us (min %.2f us, %d round trips); %zu bytes: "
             "oneway median %.2f ms (min %.2f, max %.2f) = %.1f MB/s; bidir median %.2f ms (min %.2f, "
             "max %.2f) = %.1f MB/s each way; %d reps\n",
             p0, p1, lat * 1e6, latmin * 1e6, nlat, bytes, ow[r / 2] * 1e3, ow[0] * 1e3, ow[r - 1] * 1e3,
             bytes / ow[r / 2] / 1e6, bd[r / 2] * 1e3, bd[0] * 1e3, bd[r - 1] * 1e3, bytes / bd[r / 2] / 1e6, r);
    } else {
      char p1[MPI_MAX_PROCESSOR_NAME];
      int l;
      MPI_Get_processor_name(p1, &l);
      MPI_Send(p1, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, 5, MPI_COMM_WORLD);
    }
  }
  free(a);
  free(b);
  free(t);
  MPI_Finalize();
  return 0;
}
