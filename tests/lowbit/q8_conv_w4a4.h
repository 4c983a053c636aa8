/* The w4a4 convolution of test_q8_emu.c, on two block tiles: every Q8_* of the case but Q8_NAME
 * and the tile (Q8_BM, Q8_BN, Q8_WARPS, Q8_MINB), which the includer defines before it
 * (qgemm_s8.cu undefines them all after each instance). */
#define Q8_CONV 1
#define Q8_N 96
#define Q8_LD 576
#define Q8_XB 4
#define Q8_EPI 2
#define Q8_L 15
#define Q8_YB 4
#define Q8_H 7
#define Q8_W 7
#define Q8_C 64
#define Q8_CB 64
#define Q8_KH 3
#define Q8_KW 3
#define Q8_SH 1
#define Q8_SW 1
#define Q8_PT 1
#define Q8_PL 1
#define Q8_DH 1
#define Q8_DW 1
#define Q8_OH 7
#define Q8_OW 7
#define Q8_PAD 5
#define Q8_LDYW 4
#define Q8_YPLANE 200
