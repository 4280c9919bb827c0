/*
 * loadgen: a tiny load generator for tailor's Docker tests.
 *
 * Follows a scripted CPU/memory pattern, given as arguments or, when there
 * are none, in the LOADGEN_SCRIPT environment variable (steps separated by
 * spaces or commas):
 *
 *     loadgen STEP [STEP...]
 *     STEP = MEM_MIB:CPU_CORES:SECONDS[:ramp]
 *
 * Each step holds MEM_MIB MiB of touched anonymous memory and burns
 * CPU_CORES (0..1, one thread, duty cycle over 50 ms slices) for SECONDS
 * seconds. With ":ramp" both move linearly from the previous step's values
 * to this step's over the step. After the last step the final state is held
 * until the process is killed (SIGTERM exits at once), unless the
 * environment variable LOADGEN_LOOP=1 is set: then the script starts over
 * after the last step (ramps of the first step start from the last step's
 * values). Example:
 *
 *     loadgen 8:0.05:10 64:0.2:30:ramp
 *     LOADGEN_LOOP=1 loadgen 8:0.01:30:ramp 24:0.02:30:ramp
 *
 * Built statically (gcc -static -O2) so it runs in a busybox-only image.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CHUNK ((size_t)1 << 20)
#define MAX_CHUNKS 65536
#define MAX_STEPS 256
#define SLICE_NS 50000000LL

struct step {
    double mem_mib;
    double cpu;
    double secs;
    int ramp;
};

static void *chunks[MAX_CHUNKS];
static size_t nchunks;
static volatile sig_atomic_t stop;

static void on_term(int sig) {
    (void)sig;
    stop = 1;
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void set_mem(size_t want) {
    if (want > MAX_CHUNKS) want = MAX_CHUNKS;
    while (nchunks < want) {
        void *p = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            fprintf(stderr, "loadgen: mmap failed: %s\n", strerror(errno));
            return;
        }
        /* touch every page so it counts as resident */
        for (size_t off = 0; off < CHUNK; off += 4096) ((volatile char *)p)[off] = (char)(off | 1);
        chunks[nchunks++] = p;
    }
    while (nchunks > want) munmap(chunks[--nchunks], CHUNK);
}

static int parse_step(const char *s, struct step *st) {
    char ramp[16] = {0};
    int n = sscanf(s, "%lf:%lf:%lf:%15s", &st->mem_mib, &st->cpu, &st->secs, ramp);
    if (n < 3) return -1;
    st->ramp = (n == 4 && strcmp(ramp, "ramp") == 0);
    if (n == 4 && !st->ramp) return -1;
    if (st->mem_mib < 0 || st->cpu < 0 || st->cpu > 1.0 || st->secs < 0) return -1;
    return 0;
}

int main(int argc, char **argv) {
    struct step steps[MAX_STEPS];
    int nsteps = 0;
    char *script = NULL;

    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    setvbuf(stdout, NULL, _IOLBF, 0);

    if (argc > 1) {
        for (int i = 1; i < argc && nsteps < MAX_STEPS; i++) {
            if (parse_step(argv[i], &steps[nsteps]) != 0) {
                fprintf(stderr, "loadgen: bad step %s (want MEM_MIB:CPU_CORES:SECONDS[:ramp])\n", argv[i]);
                return 2;
            }
            nsteps++;
        }
    } else if ((script = getenv("LOADGEN_SCRIPT")) != NULL) {
        char *copy = strdup(script);
        for (char *tok = strtok(copy, " ,"); tok && nsteps < MAX_STEPS; tok = strtok(NULL, " ,")) {
            if (parse_step(tok, &steps[nsteps]) != 0) {
                fprintf(stderr, "loadgen: bad step %s\n", tok);
                return 2;
            }
            nsteps++;
        }
    }
    if (nsteps == 0) {
        fprintf(stderr, "usage: loadgen MEM_MIB:CPU_CORES:SECONDS[:ramp]... (or LOADGEN_SCRIPT)\n");
        return 2;
    }

    const char *loop_env = getenv("LOADGEN_LOOP");
    int loop = loop_env != NULL && strcmp(loop_env, "1") == 0;
    double prev_mem = 0.0, prev_cpu = 0.0;
    int i = 0;
    long long step_start = now_ns();
    while (!stop) {
        long long t = now_ns();
        struct step *st = &steps[i];
        double elapsed = (double)(t - step_start) / 1e9;
        if ((i < nsteps - 1 || loop) && elapsed >= st->secs) {
            prev_mem = st->mem_mib;
            prev_cpu = st->cpu;
            i = (i + 1) % nsteps;
            step_start = t;
            printf("loadgen: step %d: mem %.0f MiB cpu %.2f for %.0f s%s\n", i, steps[i].mem_mib,
                   steps[i].cpu, steps[i].secs, steps[i].ramp ? " (ramp)" : "");
            continue;
        }
        double frac = 1.0;
        if (st->ramp && st->secs > 0) frac = elapsed / st->secs > 1.0 ? 1.0 : elapsed / st->secs;
        double mem = prev_mem + (st->mem_mib - prev_mem) * frac;
        double cpu = prev_cpu + (st->cpu - prev_cpu) * frac;
        set_mem((size_t)(mem + 0.5));
        /* one slice: busy for cpu*SLICE, sleep for the rest */
        long long busy_until = now_ns() + (long long)(cpu * SLICE_NS);
        while (now_ns() < busy_until && !stop) {
        }
        long long rest = SLICE_NS - (long long)(cpu * SLICE_NS);
        if (rest > 0) {
            struct timespec ts = {0, rest};
            nanosleep(&ts, NULL);
        }
    }
    set_mem(0);
    return 0;
}
