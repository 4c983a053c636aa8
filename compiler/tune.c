/* tune.c: see tune.h. The tune file is text, one line per layer problem (docs/cli.md, "Tuning"):
 *
 *     bnncc-tune 1
 *     DEVICE <tab> BATCH <tab> WINNER_MS <tab> DEFAULT_MS <tab> SIGNATURE <tab> CANDIDATE
 *
 * '#' lines are comments. A layer's line is found by its kernel signature, so a winner applies to
 * every layer of the same problem, in this model or another. */
#include "tune.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define TUNE_HEADER "bnncc-tune 1"
#define TUNE_FIELDS 6
/* A candidate replaces the cost model's choice only when its step is this much faster: closer
 * than that, the two are the same within the noise of profiled runs. */
#define TUNE_MARGIN 0.97

typedef struct TuneLine {
    char *field[TUNE_FIELDS]; /* device, batch, winner ms, default ms, signature, candidate */
} TuneLine;

static void free_lines(TuneLine *l, int n) {
    for (int i = 0; i < n; i++)
        for (int f = 0; f < TUNE_FIELDS; f++)
            free(l[i].field[f]);
    free(l);
}

static bool is_number(const char *s, bool integer) {
    char *end;
    errno = 0;
    if (integer)
        (void)strtol(s, &end, 10);
    else
        (void)strtod(s, &end);
    return *s && !*end && errno == 0;
}

/* The lines of a tune file. missing_ok: a file that does not exist is empty. 0, or -1 with a
 * diagnostic naming path and the line. */
static int read_lines(const char *path, bool missing_ok, TuneLine **out, int *n) {
    *out = NULL;
    *n = 0;
    if (missing_ok && access(path, F_OK) != 0)
        return 0;
    size_t len;
    char *text = read_file(path, &len);
    if (!text)
        return -1;
    if (memchr(text, '\0', len)) {
        diag_error("%s: not a bnncc tune file (it has NUL bytes)", path);
        free(text);
        return -1;
    }
    int cap = 0, lineno = 0;
    bool header = false;
    for (char *l = text, *next; l && *l; l = next) {
        lineno++;
        next = strchr(l, '\n');
        if (next)
            *next++ = '\0';
        size_t ll = strlen(l);
        if (ll && l[ll - 1] == '\r')
            l[--ll] = '\0';
        if (!ll || l[0] == '#')
            continue;
        if (!header) {
            if (strcmp(l, TUNE_HEADER) != 0) {
                diag_error("%s:%d: not a bnncc tune file (its first line must be '%s'; bnncc --tune writes "
                           "these files)", path, lineno, TUNE_HEADER);
                goto fail;
            }
            header = true;
            continue;
        }
        TuneLine t = {{0}};
        int f = 0;
        for (char *p = l; f < TUNE_FIELDS; f++) {
            char *tab = strchr(p, '\t');
            if (!tab && f < TUNE_FIELDS - 1)
                break;
            t.field[f] = tab ? xstrndup(p, (size_t)(tab - p)) : xstrdup(p);
            p = tab ? tab + 1 : p + strlen(p);
            if (f == TUNE_FIELDS - 1 && tab) {
                f = -1; /* more fields than the format has */
                break;
            }
        }
        bool ok = f == TUNE_FIELDS && is_number(t.field[1], true) && is_number(t.field[2], false) &&
                  is_number(t.field[3], false) && t.field[4][0] && t.field[5][0];
        if (!ok) {
            for (int i = 0; i < TUNE_FIELDS; i++)
                free(t.field[i]);
            diag_error("%s:%d: a tune line has %d tab-separated fields: device, batch, winner ms, default ms, "
                       "kernel signature, candidate (rerun bnncc --tune to write the file anew)",
                       path, lineno, TUNE_FIELDS);
            goto fail;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            *out = xrealloc(*out, (size_t)cap * sizeof **out);
        }
        (*out)[(*n)++] = t;
    }
    if (!header && *n == 0 && !missing_ok) {
        diag_error("%s: empty, not a bnncc tune file (bnncc --tune writes these files)", path);
        goto fail;
    }
    free(text);
    return 0;
fail:
    free(text);
    free_lines(*out, *n);
    *out = NULL;
    *n = 0;
    return -1;
}

int tune_read_file(const char *path, const Graph *g, const CodegenOptions *o, int **choice, int *tuned, FILE *warn) {
    *choice = NULL;
    *tuned = 0;
    TuneLine *lines;
    int nlines;
    if (read_lines(path, false, &lines, &nlines) != 0)
        return -1;
    CodegenTunable *t;
    int nt;
    if (codegen_tunables(g, o, &t, &nt) != 0) {
        free_lines(lines, nlines);
        return -1;
    }
    *choice = xcalloc((size_t)g->nnodes + 1, sizeof **choice);
    for (int i = 0; i <= g->nnodes; i++)
        (*choice)[i] = -1; /* no line: the cost model's configuration, with its batch alternatives */
    for (int i = 0; i < nt; i++) {
        const TuneLine *hit = NULL;
        for (int l = 0; l < nlines; l++)
            if (!strcmp(lines[l].field[4], t[i].signature))
                hit = &lines[l];
        if (!hit)
            continue;
        int c = 0;
        while (c < t[i].ncandidates && strcmp(t[i].candidate[c], hit->field[5]) != 0)
            c++;
        if (c == t[i].ncandidates) {
            if (warn)
                fprintf(warn, "bnncc: warning: %s: layer %s: candidate '%s' is not one this bnncc has for it; the "
                              "cost model's '%s' is used (rerun bnncc --tune)\n",
                        path, t[i].layer, hit->field[5], t[i].candidate[0]);
            continue;
        }
        (*choice)[t[i].node] = c;
        *tuned += 1;
    }
    codegen_tunables_free(t, nt);
    free_lines(lines, nlines);
    return 0;
}

static void put_line(Buf *b, const TuneLine *l) {
    for (int f = 0; f < TUNE_FIELDS; f++)
        buf_printf(b, "%s%c", l->field[f], f + 1 < TUNE_FIELDS ? '\t' : '\n');
}

/* Add the winners (replacing older lines of the same device, batch and signature) and write
 * the file anew, atomically. */
static int store_winners(const char *path, TuneLine *fresh, int nfresh) {
    TuneLine *old;
    int nold;
    if (read_lines(path, true, &old, &nold) != 0)
        return -1;
    Buf b = {0};
    buf_printf(&b, "%s\n# bnncc --tune: device, batch, winner ms, default ms, kernel signature, candidate "
                   "(tab-separated; docs/cli.md \"Tuning\")\n", TUNE_HEADER);
    for (int i = 0; i < nold; i++) {
        bool replaced = false;
        for (int j = 0; j < nfresh && !replaced; j++)
            replaced = !strcmp(old[i].field[0], fresh[j].field[0]) && !strcmp(old[i].field[1], fresh[j].field[1]) &&
                       !strcmp(old[i].field[4], fresh[j].field[4]);
        if (!replaced)
            put_line(&b, &old[i]);
    }
    for (int j = 0; j < nfresh; j++)
        put_line(&b, &fresh[j]);
    free_lines(old, nold);
    int rc = write_file_atomic(path, b.data, b.len);
    buf_free(&b);
    return rc;
}

/* The device part of a session's line: "NVIDIA H100 80GB HBM3" of "NVIDIA H100 80GB HBM3 (sm_90,
 * running sm_90a code)"; tabs and newlines become spaces (the file is tab-separated). */
static char *device_key(const char *device) {
    const char *paren = strstr(device, " (sm_");
    char *k = paren ? xstrndup(device, (size_t)(paren - device)) : xstrdup(device);
    for (char *p = k; *p; p++)
        if (*p == '\t' || *p == '\n' || *p == '\r')
            *p = ' ';
    return k;
}

static void progress_bar(const TuneOptions *t, int done, int total, const char *what) {
    if (!t->progress)
        return;
    if (isatty(fileno(t->progress))) {
        char bar[21];
        int fill = total ? 20 * done / total : 20;
        for (int i = 0; i < 20; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[20] = '\0';
        fprintf(t->progress, "\rtune: [%s] %d/%d %-40s", bar, done, total, what);
        if (done == total)
            fputc('\n', t->progress);
    } else if (done < total) {
        fprintf(t->progress, "tune: %d/%d %s\n", done + 1, total, what);
    }
    fflush(t->progress);
}

/* The candidate the plan runs for layer u at this batch when u has no tune entry: the last of
 * its batch alternatives whose batch is reached, else the cost model's (0). */
static int plan_candidate(const CodegenTunable *u, int batch) {
    int c = 0;
    for (int a = 0; a < u->nalts; a++)
        if (batch >= u->alt_from[a])
            c = u->alt_candidate[a];
    return c;
}

/* The blob of variant v: "<work_path>.<v>". */
static char *variant_path(const TuneOptions *t, int v) {
    Buf b = {0};
    buf_printf(&b, "%s.%d", t->work_path, v);
    return buf_take(&b);
}

/* Tunable layer j's candidate in variant v (every layer on its candidate v, the cost model's
 * where it has fewer). */
static int variant_candidate(const CodegenTunable *tun, int j, int v) { return v < tun[j].ncandidates ? v : 0; }

/* How many more plan steps variant v has than variant 0 in the layers before tunable j (all
 * of them: j = nt): a candidate may take several steps (CodegenTunable.nsteps). */
static int variant_shift(const CodegenTunable *tun, int j, int v) {
    int shift = 0;
    for (int k = 0; k < j; k++)
        shift += tun[k].nsteps[variant_candidate(tun, k, v)] - tun[k].nsteps[0];
    return shift;
}

/* Tunable layer j's ms in variant v (its steps' ms summed; steps not run on the GPU, such as
 * the CPU's copy of an int8 convolution, count nothing), from ms, that variant's steps (nsteps0,
 * variant 0's number, shifted: the nt tunable layers' variant_shift); -1 when none of its steps
 * was timed. */
static double layer_ms(const CodegenTunable *tun, int nt, int j, int v, const double *ms, int nsteps0) {
    if (!ms)
        return -1.0;
    const int first = tun[j].step + variant_shift(tun, j, v), n = tun[j].nsteps[variant_candidate(tun, j, v)],
              nsteps = nsteps0 + variant_shift(tun, nt, v);
    double sum = -1.0;
    for (int st = first; st >= 0 && st < first + n && st < nsteps; st++)
        if (ms[st] >= 0)
            sum = (sum < 0 ? 0 : sum) + ms[st];
    return sum;
}

int tune_model(const Graph *g, const CodegenOptions *base, const TuneOptions *t, const TuneMeasurer *m,
               int **choice) {
    CodegenTunable *tun = NULL;
    TuneLine *old = NULL, *fresh = NULL;
    int nt = 0, nold = 0, rc = -1, nvar = 1, nsteps0 = -1, nfresh = 0, compiled = 0;
    *choice = NULL;
    if (t->batch < 1 || t->runs < 1 || t->rounds < 1) {
        diag_error("--tune needs a batch of at least 1 (--tune=BATCH)");
        return -1;
    }
    /* A tune file that cannot take the winners is an error before any GPU time is spent. */
    if (read_lines(t->file, true, &old, &nold) != 0)
        return -1;
    free_lines(old, nold);
    if (codegen_tunables(g, base, &tun, &nt) != 0)
        return -1;
    *choice = xcalloc((size_t)g->nnodes + 1, sizeof **choice);
    for (int i = 0; i < nt; i++)
        nvar = tun[i].ncandidates > nvar ? tun[i].ncandidates : nvar;
    double **ms = xcalloc((size_t)nvar, sizeof *ms);            /* per variant: each step's median */
    bool *valid = xcalloc((size_t)nvar, sizeof *valid);
    int *vchoice = xcalloc((size_t)g->nnodes + 1, sizeof *vchoice);
    double **round_ms = xcalloc((size_t)nvar * (size_t)t->rounds + 1, sizeof *round_ms);
    unsigned char *ref = NULL;
    size_t ref_bytes = 0;
    char device[256] = "";

    /* A GPU first, before seconds of NVRTC: a blob with no GPU code is enough to ask. */
    CodegenOptions o = *base;
    o.ntargets = 0;
    o.report = NULL;
    o.progress = false;
    o.tune_choice = NULL;
    char *probe = variant_path(t, 0);
    int probed = codegen_write_blob(g, &o, probe) == 0 && m->probe(m->ctx, probe) == 0 ? 0 : -1;
    remove(probe);
    free(probe);
    if (probed != 0)
        goto done;
    if (nt == 0) {
        if (t->progress)
            fprintf(t->progress, "tune: no layer of this model has a choice of kernel configuration; nothing "
                                 "to measure\n");
        rc = store_winners(t->file, NULL, 0);
        goto done;
    }
    /* Every variant compiled first, so that the measurements run back to back on a GPU that
     * does not idle between them. Every variant for the user's targets, as the final blob: a
     * kernel choice that depends on the target list (the pre-tiled GEMM's) stays the same. */
    for (int v = 0; v < nvar; v++) {
        for (int i = 0; i < nt; i++)
            vchoice[tun[i].node] = v < tun[i].ncandidates ? v : 0;
        o = *base;
        o.report = NULL;
        o.progress = false;
        o.tune_choice = vchoice;
        o.ntune_choice = g->nnodes;
        o.no_batch_alts = true; /* the plan steps of codegen_tunables, which compares their times */
        char what[64];
        snprintf(what, sizeof what, "variant %d of %d: compiling", v + 1, nvar);
        progress_bar(t, v, nvar + nvar * t->rounds, what);
        char *vp = variant_path(t, v);
        int w = codegen_write_blob(g, &o, vp);
        free(vp);
        if (w != 0)
            goto done;
        compiled = v + 1;
        valid[v] = true;
    }
    /* Rounds over the variants, forward then backward (ABBA): with an even number of rounds
     * every variant's mean position is the same, so a GPU that speeds up or slows down steadily
     * (clocks ramping, a neighbour's load) favours none. A step's time is the mean of its
     * rounds' medians. A variant whose run fails (too little shared memory on this GPU, a grid
     * too large) or whose outputs differ from the cost model's is never used. */
    for (int r = 0; r < t->rounds; r++)
        for (int k = 0; k < nvar; k++) {
            int v = r % 2 ? nvar - 1 - k : k; /* variant 0 first of all: the reference outputs */
            if (!valid[v])
                continue;
            char what[64];
            snprintf(what, sizeof what, "round %d of %d: variant %d", r + 1, t->rounds, v + 1);
            progress_bar(t, nvar + r * nvar + k, nvar + nvar * t->rounds, what);
            unsigned char *out = NULL;
            size_t out_bytes = 0;
            int nsteps = 0;
            char dev[256] = "";
            char *vp = variant_path(t, v);
            int mrc = m->measure(m->ctx, vp, t->batch, t->runs, 1234u, &round_ms[v * t->rounds + r], &nsteps, &out,
                                 &out_bytes, dev, sizeof dev);
            free(vp);
            if (mrc != 0 && v == 0)
                goto done; /* the cost model's own blob does not run: nothing to compare with */
            if (mrc != 0) {
                valid[v] = false;
                if (t->progress)
                    fprintf(t->progress, "\nbnncc: warning: --tune: variant %d does not run here (%s); its "
                                         "configurations are not used\n", v + 1, diag_message());
                continue;
            }
            if (v == 0 && r == 0) {
                snprintf(device, sizeof device, "%s", dev);
                nsteps0 = nsteps;
                ref = out;
                ref_bytes = out_bytes;
                continue;
            }
            if (nsteps != nsteps0 + variant_shift(tun, nt, v)) {
                free(out);
                diag_error("--tune: variant %d has %d plan steps, the cost model's %d and its candidates' %+d (a bnncc "
                           "bug: please report it)", v + 1, nsteps, nsteps0, variant_shift(tun, nt, v));
                goto done;
            }
            /* Every candidate computes the same function: outputs that differ mean a kernel bug. */
            bool same = out_bytes == ref_bytes && !memcmp(out, ref, ref_bytes);
            free(out);
            if (!same) {
                valid[v] = false;
                if (t->progress)
                    fprintf(t->progress, "\nbnncc: warning: --tune: variant %d's outputs differ from the cost model's "
                                         "choice's; its configurations are not used (a bnncc bug: please report it "
                                         "with the model)\n", v + 1);
            }
        }
    progress_bar(t, nvar + nvar * t->rounds, nvar + nvar * t->rounds, "");
    for (int v = 0; v < nvar; v++) {
        if (!valid[v])
            continue;
        const int nv = nsteps0 + variant_shift(tun, nt, v);
        ms[v] = xmalloc(((size_t)nv + 1) * sizeof **ms);
        for (int st = 0; st < nv; st++) {
            double sum = 0;
            int n = 0;
            for (int r = 0; r < t->rounds; r++)
                if (round_ms[v * t->rounds + r] && round_ms[v * t->rounds + r][st] >= 0) {
                    sum += round_ms[v * t->rounds + r][st];
                    n++;
                }
            ms[v][st] = n ? sum / n : -1.0;
        }
    }
    /* Layers of one signature are one problem: one winner for all of them, by their summed
     * times (a tune file, read back, gives each the same tile; the sum is less noisy too). The
     * winner must beat what the plan runs at this batch (the cost model's candidate, or the batch
     * alternative's from its batch on: plan_candidate), which the variants time as a candidate. */
    fresh = xcalloc((size_t)nt, sizeof *fresh);
    int changed = 0;
    double before = 0, after = 0; /* the tunable steps' ms, the rule's and the winners' */
    char batch[32];
    snprintf(batch, sizeof batch, "%d", t->batch);
    char *dkey = device_key(device);
    if (t->progress)
        fprintf(t->progress, "tune: %s, batch %d, the mean of %d rounds' medians of %d profiled runs a variant\n"
                             "tune: %-40s %10s %10s  %s\n", device, t->batch, t->rounds, t->runs, "layer", "plan ms",
                "tuned ms", "configuration");
    for (int i = 0; i < nt; i++) {
        if (tun[i].step < 0 || tun[i].step >= nsteps0 || layer_ms(tun, nt, i, 0, ms[0], nsteps0) < 0) {
            free(dkey);
            diag_error("--tune: layer %s: its step %d was not timed (a bnncc bug: please report it)", tun[i].layer,
                       tun[i].step);
            goto done;
        }
    }
    for (int i = 0; i < nt; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = !strcmp(tun[j].signature, tun[i].signature);
        if (seen)
            continue;
        double total[CODEGEN_MAX_CANDIDATES] = {0};
        int members = 0;
        for (int j = i; j < nt; j++) {
            if (strcmp(tun[j].signature, tun[i].signature) != 0)
                continue;
            members++;
            for (int c = 0; c < tun[i].ncandidates; c++) {
                const double lm = layer_ms(tun, nt, j, c, ms[c], nsteps0);
                total[c] = total[c] < 0 || lm < 0 ? -1.0 : total[c] + lm;
            }
        }
        int plan = plan_candidate(&tun[i], t->batch);
        if (plan >= tun[i].ncandidates || !valid[plan] || total[plan] < 0)
            plan = 0;
        int best = plan;
        for (int c = 0; c < tun[i].ncandidates; c++)
            if (c != plan && valid[c] && total[c] >= 0 && total[c] < TUNE_MARGIN * total[plan] &&
                total[c] < total[best])
                best = c;
        char wms[32], dms[32];
        snprintf(wms, sizeof wms, "%.4f", total[best] / members);
        snprintf(dms, sizeof dms, "%.4f", total[plan] / members);
        TuneLine *l = &fresh[nfresh++];
        l->field[0] = xstrdup(dkey);
        l->field[1] = xstrdup(batch);
        l->field[2] = xstrdup(wms);
        l->field[3] = xstrdup(dms);
        l->field[4] = xstrdup(tun[i].signature);
        l->field[5] = xstrdup(tun[i].candidate[best]);
        for (int j = i; j < nt; j++) {
            if (strcmp(tun[j].signature, tun[i].signature) != 0)
                continue;
            (*choice)[tun[j].node] = best;
            changed += best != plan;
            const double plan_ms = layer_ms(tun, nt, j, plan, ms[plan], nsteps0),
                         best_ms = layer_ms(tun, nt, j, best, ms[best], nsteps0);
            before += plan_ms;
            after += best_ms;
            if (t->progress)
                fprintf(t->progress, "tune: %-40s %10.4f %10.4f  %s%s\n", tun[j].layer, plan_ms, best_ms,
                        tun[j].candidate[best],
                        best != plan ? "" : plan ? " (the plan's at this batch)" : " (the cost model's)");
        }
        if (t->progress) { /* every candidate's mean ms over the problem's layers: why one won */
            fprintf(t->progress, "tune:   candidates, ms:");
            for (int c = 0; c < tun[i].ncandidates; c++) {
                if (valid[c] && total[c] >= 0)
                    fprintf(t->progress, "%s %.4f %s", c ? " |" : "", total[c] / members, tun[i].candidate[c]);
                else
                    fprintf(t->progress, "%s - %s (not used)", c ? " |" : "", tun[i].candidate[c]);
            }
            fputc('\n', t->progress);
        }
    }
    free(dkey);
    double whole = 0;
    for (int st = 0; st < nsteps0; st++)
        whole += ms[0][st] > 0 ? ms[0][st] : 0;
    if (t->progress)
        fprintf(t->progress, "tune: %d of %d layers on another configuration than the plan's at this batch (layers "
                             "of one kernel signature share one); winners stored in %s\n"
                             "tune: the tunable layers' steps take %.4f ms with the plan's configurations at this "
                             "batch, %.4f ms tuned (%+.1f %%), of %.4f ms for all the steps of a profiled run\n",
                changed, nt, t->file, before, after, before > 0 ? 100.0 * (after - before) / before : 0.0, whole);
    rc = store_winners(t->file, fresh, nfresh);
done:
    if (rc != 0 && t->progress && isatty(fileno(t->progress)))
        fputc('\n', t->progress); /* end the progress bar's line before the error */
    if (fresh)
        free_lines(fresh, nt);
    for (int v = 0; v < nvar; v++) {
        free(ms[v]);
        for (int r = 0; r < t->rounds; r++)
            free(round_ms[v * t->rounds + r]);
        if (v < compiled) {
            char *vp = variant_path(t, v);
            remove(vp);
            free(vp);
        }
    }
    free(ms);
    free(round_ms);
    free(valid);
    free(vchoice);
    free(ref);
    codegen_tunables_free(tun, nt);
    if (rc != 0) {
        free(*choice);
        *choice = NULL;
    }
    return rc;
}
