/* tile_layout.c: see tile_layout.h. */
#include "tile_layout.h"

#include <string.h>

static int nchunks(int k, int kalign_bits) { return bnn_tiled_kpad(k, kalign_bits) / 128; }

size_t bnn_tiled_bytes(int rows, int k, int tile_rows, int kalign_bits) {
    size_t tiles = (size_t)((rows + tile_rows - 1) / tile_rows);
    return tiles * (size_t)tile_rows * (size_t)nchunks(k, kalign_bits) * 16;
}

size_t bnn_tiled_offset(int r, int c, int k, int tile_rows, int kalign_bits) {
    size_t nch = (size_t)nchunks(k, kalign_bits);
    return ((size_t)(r / tile_rows) * nch + (size_t)c) * (size_t)tile_rows * 16 + (size_t)(r % tile_rows) * 16;
}

int bnn_tile_bits(const uint32_t *src, int rows, int k, int ld_words, int tile_rows, int kalign_bits, void *dst) {
    if (rows < 0 || k < 1 || kalign_bits < 256 || kalign_bits % 256 || tile_rows < 8 || tile_rows % 8 ||
        ld_words < (k + 31) / 32)
        return -1;
    unsigned char *out = dst;
    memset(out, 0, bnn_tiled_bytes(rows, k, tile_rows, kalign_bits));
    const int kw = (k + 31) / 32, nch = (k + 127) / 128; /* chunks holding real bits */
    for (int r = 0; r < rows; r++) {
        const uint32_t *row = src + (size_t)r * (size_t)ld_words;
        for (int c = 0; c < nch; c++) {
            uint32_t w[4];
            for (int j = 0; j < 4; j++) {
                int wi = 4 * c + j;
                w[j] = wi < kw ? row[wi] : 0;
                if (wi == kw - 1 && k % 32) /* bits past k are zeros in the image */
                    w[j] &= (1u << (k % 32)) - 1;
            }
            /* Little-endian words, as the device reads them. */
            unsigned char *p = out + bnn_tiled_offset(r, c, k, tile_rows, kalign_bits);
            for (int j = 0; j < 4; j++)
                for (int b = 0; b < 4; b++)
                    p[4 * j + b] = (unsigned char)(w[j] >> (8 * b));
        }
    }
    return 0;
}

void bnn_row_popc_host(const uint32_t *src, int rows, int k, int ld_words, int *out) {
    const int kw = (k + 31) / 32;
    for (int r = 0; r < rows; r++) {
        int s = 0;
        for (int i = 0; i < kw; i++) {
            uint32_t w = src[(size_t)r * (size_t)ld_words + (size_t)i];
            if (i == kw - 1 && k % 32)
                w &= (1u << (k % 32)) - 1;
            s += __builtin_popcount(w);
        }
        out[r] = s;
    }
}
