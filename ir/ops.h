/* The op list: declared once, expanded into the op enum, the names the printer and
 * parser use, operand counts and flags (see ir.h). Semantics of each op: docs/ir.md.
 *
 * X(enum, name, min_inputs, max_inputs, outputs, flags)
 * max_inputs of -1 means variadic (concat). */
#define OP_LIST(X)                                                  \
    /* linear algebra */                                            \
    X(OP_CONV2D,        "conv2d",        2, 3, 1, 0)                \
    X(OP_DENSE,         "dense",         2, 3, 1, 0)                \
    X(OP_MATMUL,        "matmul",        2, 2, 1, 0)                \
    /* normalisation, binarisation, quantisation */                 \
    X(OP_BATCHNORM,     "batchnorm",     5, 5, 1, 0)                \
    X(OP_SIGN,          "sign",          1, 1, 1, 0)                \
    X(OP_BINARIZE,      "binarize",      1, 1, 1, 0)                \
    X(OP_THRESHOLD,     "threshold",     2, 3, 1, 0)                \
    X(OP_QUANT,         "quant",         4, 4, 1, 0)                \
    X(OP_TRUNC,         "trunc",         5, 5, 1, 0)                \
    X(OP_CAST,          "cast",          1, 1, 1, 0)                \
    /* pooling */                                                   \
    X(OP_MAXPOOL,       "maxpool",       1, 1, 1, 0)                \
    X(OP_AVGPOOL,       "avgpool",       1, 1, 1, 0)                \
    X(OP_GLOBALAVGPOOL, "globalavgpool", 1, 1, 1, 0)                \
    /* elementwise, numpy broadcasting */                           \
    X(OP_ADD,           "add",           2, 2, 1, 0)                \
    X(OP_SUB,           "sub",           2, 2, 1, 0)                \
    X(OP_MUL,           "mul",           2, 2, 1, 0)                \
    X(OP_DIV,           "div",           2, 2, 1, 0)                \
    X(OP_POW,           "pow",           2, 2, 1, 0)                \
    X(OP_RELU,          "relu",          1, 1, 1, 0)                \
    X(OP_CLIP,          "clip",          1, 1, 1, 0)                \
    /* data movement */                                             \
    X(OP_RESHAPE,       "reshape",       1, 1, 1, 0)                \
    X(OP_TRANSPOSE,     "transpose",     1, 1, 1, 0)                \
    X(OP_CONCAT,        "concat",        1, -1, 1, 0)               \
    X(OP_PAD,           "pad",           1, 1, 1, 0)                \
    /* heads */                                                     \
    X(OP_SOFTMAX,       "softmax",       1, 1, 1, 0)                \
    X(OP_ARGMAX,        "argmax",        1, 1, 1, 0)                \
    X(OP_TOPK,          "topk",          1, 1, 2, 0)                \
    /* fused binary layers (compiler/passes/fuse_binary.c) */       \
    X(OP_BDENSE,        "bdense",        4, 4, 1, 0)                \
    X(OP_BCONV2D,       "bconv2d",       4, 4, 1, 0)                \
    /* binary conv + its float epilogue (compiler/passes/fuse_epilogue.c) */ \
    X(OP_BCONV2D_CHAIN, "bconv2d_chain", 3, 4, 2, 0)                \
    X(OP_BDENSE_CHAIN,  "bdense_chain",  3, 4, 2, 0)                \
    /* float conv + epilogue, max-pool, binarize: the stem (same pass) */ \
    X(OP_CONV2D_CHAIN,  "conv2d_chain",  3, 4, 2, 0)                \
    /* layout change of a b1 tensor (compiler/passes/choose_formats.c) */ \
    X(OP_REPACK,        "repack",        1, 1, 1, 0)                \
    /* low-bit layers over integer codes (compiler/passes/lowbit.c) */ \
    X(OP_QUANTIZE,      "quantize",      4, 4, 1, 0)                \
    X(OP_QDENSE,        "qdense",        2, 4, 1, 0)                \
    X(OP_QCONV2D,       "qconv2d",       2, 4, 1, 0)                \
    /* qconv2d + its float chain, residual, relu, next quantizer (fuse_epilogue.c) */ \
    X(OP_QCONV2D_CHAIN, "qconv2d_chain", 3, 4, 2, 0)
