/* The w3a3 convolution of test_q8_emu.c, on both of its block tiles: every Q8_* of the case but
 * Q8_NAME and the tile (Q8_BM, Q8_BN), which the includer defines before it (qgemm_s8.cu undefines
 * them all after each instance). */
#define Q8_CONV 1
#define Q8_N 130
#define Q8_BK 128
#define Q8_DYN 1
#define Q8_LD 3072
#define Q8_XB 3
#define Q8_EPI 2
#define Q8_L 7
#define Q8_YB 3
#define Q8_H 5
#define Q8_W 6
#define Q8_C 300
#define Q8_CB 512
#define Q8_KH 2
#define Q8_KW 3
#define Q8_SH 1
#define Q8_SW 2
#define Q8_PT 1
#define Q8_PL 2
#define Q8_DH 2
#define Q8_DW 1
#define Q8_OH 4
#define Q8_OW 4
#define Q8_PAD 3
#define Q8_LDYW 8
#define Q8_YPLANE 128
