/* qconv_emu_tiny_8x8.h: the 3x3 convs of w1a2resnet18_tiny's 8x8 stage (16 channels, 2-bit
 * codes, bipolar weights) for test_qconv_emu's cases, which add S_ID, S_NAME, the epilogue and
 * the tile. */
#define S_C 16
#define S_H 8
#define S_W 8
#define S_O 16
#define S_KH 3
#define S_KW 3
#define S_PT 1
#define S_PL 1
#define S_OH 8
#define S_OW 8
#define S_XB 2
#define S_WB 1
#define S_BIPOLAR 1
