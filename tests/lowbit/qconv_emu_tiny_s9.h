/* qconv_emu_tiny_s9.h: the shape of w1a2resnet18_tiny's step s9 (a chain with a residual, the
 * dequantized f32 and codes) for test_qconv_emu's cases, which add S_ID, S_NAME and the tile. */
#include "qconv_emu_tiny_8x8.h"
#define S_EPI 3
#define S_YB 2
#define S_LDW 1
#define S_RES 1
#define S_ORELU 1
#define S_F32 2
#define S_QHI 3
