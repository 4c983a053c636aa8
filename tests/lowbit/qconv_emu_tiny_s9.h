/* qconv_emu_tiny_s9.h: the shape of w1a2resnet18_tiny's step s9 (a chain with a residual, the
 * dequantized f32 and codes) for test_qconv_emu's cases, which add S_ID, S_NAME and the tile. */
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
#define S_EPI 3
#define S_YB 2
#define S_LDW 1
#define S_RES 1
#define S_ORELU 1
#define S_F32 2
#define S_QHI 3
