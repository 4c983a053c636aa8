/* tune.h: bnncc --tune. Some layers have several GPU kernel configurations of the same result
 * (codegen_tunables: the halo convolutions' tiles); the cost model picks one without knowing the
 * GPU or the batch. The tuner compiles the model once per candidate, runs every variant on the
 * GPU at the user's batch with per-step timing, keeps for each layer the candidate whose step
 * was fastest, and stores the winners in a text file that later compiles read
 * (docs/cli.md, "Tuning"). A variant whose outputs differ from the cost model's is never used. */
#ifndef BNN_TUNE_H
#define BNN_TUNE_H

#include <stdbool.h>
#include <stdio.h>

#include "codegen.h"
#include "ir.h"

/* What the tuner needs from a device: run one compiled variant. The GPU one is
 * tune_gpu_measurer; tests pass their own. */
typedef struct TuneMeasurer {
    void *ctx;
    /* Whether a device can run at all, before anything is compiled: 0, or -1 with a diagnostic
     * that says why not (no GPU, no driver). cpu_blob: a model compiled with no GPU target. */
    int (*probe)(void *ctx, const char *cpu_blob);
    /* Run the blob at path at batch on inputs made from seed, `runs` times with per-step timing:
     * *nsteps and each step's median milliseconds into *step_ms (malloc'ed; -1 for a step the
     * device does not run), the outputs of a run, all of them back to back, into *outputs
     * (malloc'ed) and *out_bytes, and the device's line ("NVIDIA H100 80GB HBM3 (sm_90, running
     * sm_90a code)", bnn_session_device_name) into device. 0, or -1 with a diagnostic. */
    int (*measure)(void *ctx, const char *path, int batch, int runs, unsigned seed, double **step_ms, int *nsteps,
                   unsigned char **outputs, size_t *out_bytes, char *device, size_t device_len);
} TuneMeasurer;

/* The measurer on this machine's GPU, through libbnnrt (the CUDA driver opened at run time). */
TuneMeasurer tune_gpu_measurer(void);

typedef struct TuneOptions {
    int batch;             /* the batch to measure at (--tune=BATCH) */
    int runs, rounds;      /* rounds over the variants (forward, backward, ...: best even) of `runs`
                            * profiled runs each: a step's time is the mean of its rounds' medians */
    const char *file;      /* the tune file the winners go to (added or replacing older lines) */
    const char *work_path; /* the variants' blobs are "<work_path>.<v>", removed at the end */
    FILE *progress;        /* progress and the table of winners, or NULL */
} TuneOptions;

/* Measure the candidates of g's tunable layers (base: the user's options, every variant
 * compiled for its targets) and fill *choice (malloc'ed, g->nnodes entries, for
 * CodegenOptions.tune_choice) with the winners; store them in t->file. 0 ok (also when no
 * layer has a choice: every entry 0, a tune file without lines); -1 with a diagnostic (no
 * device, a tune file that is not one, the cost model's own variant failing to run). */
int tune_model(const Graph *g, const CodegenOptions *base, const TuneOptions *t, const TuneMeasurer *m,
               int **choice);

/* Read a tune file and fill *choice (g->nnodes entries) for the tunable layers of g whose
 * signature it has a line for (the last such line wins); -1 for the others (no choice: they
 * keep their batch alternatives). Lines for other layers are ignored; a candidate name this
 * bnncc does not know is a warning on warn (NULL: none) and no choice. *tuned: how many layers
 * got a candidate from the file. 0 ok; -1 with a diagnostic
 * naming the file and line (unreadable file, a line not of the format). */
int tune_read_file(const char *path, const Graph *g, const CodegenOptions *o, int **choice, int *tuned, FILE *warn);

#endif
