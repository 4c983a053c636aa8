/* folded_levels.h: a code epilogue's levels as the GPU kernels read them over x0, for the C
 * emulator tests (test_q8_emu, test_planes_emu). */
#ifndef BNN_TEST_FOLDED_LEVELS_H
#define BNN_TEST_FOLDED_LEVELS_H
#include <stdint.h>
#include <stdlib.h>

#include "blob.h"

/* The levels t[n][l] with directions dir[n] as lower.c put_q8_dense_levels writes them: folded
 * (t ^ -1 for a falling channel) and sorted ascending, each channel's l of them, then from
 * BLOB_Q8_EST_LEVELS on their estimates (the int8 convolutions read the levels alone); a word
 * more, zero (calloc; free it). */
static int32_t *folded_levels(const int32_t *t, const int32_t *dir, int64_t n, int l) {
    int32_t *ts = calloc((size_t)blob_q8_levels_bytes(n, l) / 4 + 1, 4);
    for (int64_t o = 0; o < n; o++) {
        for (int i = 0; i < l; i++) {
            int32_t v = t[o * l + i] ^ (dir[o] < 0 ? -1 : 0), j = i;
            for (; j > 0 && ts[o * l + j - 1] > v; j--) /* insertion */
                ts[o * l + j] = ts[o * l + j - 1];
            ts[o * l + j] = v;
        }
        if (l >= BLOB_Q8_EST_LEVELS)
            blob_q8_level_estimate(ts + o * l, l, ts + blob_q8_est_at(n, l) + o * BLOB_Q8_EST_WORDS);
    }
    return ts;
}
#endif
