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

/* Chunk c (bits 128c..128c+127) of a packed row of k bits into 16 bytes at p: little-endian
 * words, as the device reads them, bits past k zero. */
static void put_chunk(const uint32_t *row, int k, int c, unsigned char *p) {
    const int kw = (k + 31) / 32;
    for (int j = 0; j < 4; j++) {
        int wi = 4 * c + j;
        uint32_t w = wi < kw ? row[wi] : 0;
        if (wi == kw - 1 && k % 32) /* bits past k are zeros in the image */
            w &= (1u << (k % 32)) - 1;
        for (int b = 0; b < 4; b++)
            p[4 * j + b] = (unsigned char)(w >> (8 * b));
    }
}

int bnn_tile_bits(const uint32_t *src, int rows, int k, int ld_words, int tile_rows, int kalign_bits, void *dst) {
    if (rows < 0 || k < 1 || kalign_bits < 256 || kalign_bits % 256 || tile_rows < 8 || tile_rows % 8 ||
        ld_words < (k + 31) / 32)
        return -1;
    unsigned char *out = dst;
    memset(out, 0, bnn_tiled_bytes(rows, k, tile_rows, kalign_bits));
    const int nch = (k + 127) / 128; /* chunks holding real bits */
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < nch; c++)
            put_chunk(src + (size_t)r * (size_t)ld_words, k, c, out + bnn_tiled_offset(r, c, k, tile_rows, kalign_bits));
    return 0;
}

size_t bnn_tiled_planes_bytes(int rows, int planes, int k, int tile_rows, int kalign_bits) {
    return (size_t)planes * bnn_tiled_bytes(rows, k, tile_rows, kalign_bits);
}

size_t bnn_tiled_planes_offset(int r, int p, int c, int planes, int k, int tile_rows, int kalign_bits) {
    size_t nch = (size_t)nchunks(k, kalign_bits);
    return (((size_t)(r / tile_rows) * (size_t)planes + (size_t)p) * nch + (size_t)c) * (size_t)tile_rows * 16 +
           (size_t)(r % tile_rows) * 16;
}

int bnn_tile_planes(const uint32_t *src, int rows, int planes, int k, size_t row_words, size_t plane_words,
                    int tile_rows, int kalign_bits, void *dst) {
    if (rows < 0 || planes < 1 || k < 1 || kalign_bits < 256 || kalign_bits % 256 || tile_rows < 8 ||
        tile_rows % 8)
        return -1;
    unsigned char *out = dst;
    memset(out, 0, bnn_tiled_planes_bytes(rows, planes, k, tile_rows, kalign_bits));
    const int nch = (k + 127) / 128; /* chunks holding real bits */
    for (int r = 0; r < rows; r++)
        for (int p = 0; p < planes; p++)
            for (int c = 0; c < nch; c++)
                put_chunk(src + (size_t)r * row_words + (size_t)p * plane_words, k, c,
                          out + bnn_tiled_planes_offset(r, p, c, planes, k, tile_rows, kalign_bits));
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
