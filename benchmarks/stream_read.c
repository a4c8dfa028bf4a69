/* Independent reference for napkin's memory probe: read bandwidth of a plain C loop.
 *
 * Sums a large array of doubles with OpenMP threads (one per core by default), the
 * same read-only pattern as the probe but compiled with -O3 -march=native, so the
 * compiler's vector loads set the bar. Prints the best pass in GB/s (1e9 bytes/s).
 *
 *   usage: stream_read [MiB] [passes]
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 512;
    int passes = argc > 2 ? atoi(argv[2]) : 7;
    size_t n = mib * 1024 * 1024 / sizeof(double);
    double *a = malloc(n * sizeof(double));
    if (!a) { fprintf(stderr, "cannot allocate %zu MiB\n", mib); return 1; }
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) a[i] = (double)i;  /* distinct pages, first touch per thread */

    double best = 0, checksum = 0;
    for (int p = 0; p <= passes; p++) {
        double sum = 0, t0 = omp_get_wtime();
        /* simd: vector loads with several partial sums, as the probe's numpy sum does */
        #pragma omp parallel for simd schedule(static) reduction(+ : sum)
        for (size_t i = 0; i < n; i++) sum += a[i];
        double seconds = omp_get_wtime() - t0;
        checksum += sum;
        if (p > 0 && n * sizeof(double) / seconds > best) best = n * sizeof(double) / seconds;
    }
    printf("%.3f\n", best / 1e9);
    fprintf(stderr, "threads=%d checksum=%g\n", omp_get_max_threads(), checksum);
    free(a);
    return 0;
}
