/* Independent reference for napkin's memory probe: read bandwidth of compiled C loops.
 *
 * Reads a large array with OpenMP threads (one per core by default) in three ways, each
 * compiled with -O3 -march=native so the compiler's widest vector loads set the bar:
 *   sum   a double-precision sum, vectorised by an OpenMP simd reduction;
 *   sum4  the same with four independent partial sums per thread, unrolled by hand, so
 *         no chain of dependent adds can limit the loads;
 *   or    a 64-bit integer OR (no floating point at all).
 * The kernels take turns pass by pass (after one warm-up pass each). Prints one line per
 * kernel: name, best pass and median pass in GB/s (1e9 bytes/s).
 *
 *   usage: stream_read [MiB] [passes]
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KERNELS = 3, MAX_PASSES = 256 };
static const char *NAMES[KERNELS] = {"sum", "sum4", "or"};

static double read_once(int kernel, const double *a, size_t n, double *sink) {
    double t0 = omp_get_wtime();
    if (kernel == 0) {
        double sum = 0;
        #pragma omp parallel for simd schedule(static) reduction(+ : sum)
        for (size_t i = 0; i < n; i++) sum += a[i];
        *sink += sum;
    } else if (kernel == 1) {
        double sum = 0;
        #pragma omp parallel reduction(+ : sum)
        {
            double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            #pragma omp for schedule(static)
            for (size_t i = 0; i < n / 32; i++) {
                const double *p = a + 32 * i;
                #pragma omp simd reduction(+ : s0, s1, s2, s3)
                for (int j = 0; j < 8; j++) {
                    s0 += p[j]; s1 += p[8 + j]; s2 += p[16 + j]; s3 += p[24 + j];
                }
            }
            sum += s0 + s1 + s2 + s3;
        }
        *sink += sum;
    } else {
        const uint64_t *u = (const uint64_t *)a;
        uint64_t acc = 0;
        #pragma omp parallel for simd schedule(static) reduction(| : acc)
        for (size_t i = 0; i < n; i++) acc |= u[i];
        *sink += (double)(acc & 1);
    }
    return omp_get_wtime() - t0;
}

static int cmp(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 512;
    int passes = argc > 2 ? atoi(argv[2]) : 7;
    if (passes < 1 || passes > MAX_PASSES) { fprintf(stderr, "passes: 1..%d\n", MAX_PASSES); return 2; }
    size_t n = mib * 1024 * 1024 / sizeof(double);
    n -= n % 32;
    double *a = malloc(n * sizeof(double));
    if (!a) { fprintf(stderr, "cannot allocate %zu MiB\n", mib); return 1; }
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) a[i] = (double)i;  /* distinct pages, first touch per thread */

    static double rates[KERNELS][MAX_PASSES];
    double sink = 0;
    for (int p = 0; p <= passes; p++)
        for (int k = 0; k < KERNELS; k++) {
            double seconds = read_once(k, a, n, &sink);
            if (p > 0) rates[k][p - 1] = n * sizeof(double) / seconds / 1e9;
        }
    for (int k = 0; k < KERNELS; k++) {
        qsort(rates[k], passes, sizeof(double), cmp);
        double median = passes % 2 ? rates[k][passes / 2]
                                   : (rates[k][passes / 2 - 1] + rates[k][passes / 2]) / 2;
        printf("%s %.3f %.3f\n", NAMES[k], rates[k][passes - 1], median);
    }
    fprintf(stderr, "threads=%d checksum=%g\n", omp_get_max_threads(), sink);
    free(a);
    return 0;
}
