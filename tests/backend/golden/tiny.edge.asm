.input    x           f32 [4, 8]
.input    w           f32 [8, 16]
.input    b           f32 [16]
.output   y           f32 [4, 16]
.scratch  scratch.f32 f32 [128]

kernel      matmul_bias_relu.h
load        sram@0:4x8:f32 <- x[0:4x8/8]  signal=k0.g1al0
load        sram@256:8x16:f32 <- w[0:8x16/16]  signal=k0.g1bl0
load        sram@1280:1x16:f32 <- b[0:1x16/16]  signal=k0.g1el0
matmul      acc@0:4x16:f32 <- sram@0:4x8:f32, sram@256:8x16:f32  wait=k0.g1al0,k0.g1bl0  signal=k0.g1af0,k0.g1bf0
binary.add  sram@1408:4x16:f32 <- acc@0:4x16:f32, sram@1280:1x16:f32  bcast=row  wait=k0.g1el0
unary.relu  sram@1408:4x16:f32 <- sram@1408:4x16:f32  signal=k0.g1ef0,k0.g1s0
store       scratch.f32[0:4x16/16] <- sram@1408:4x16:f32  wait=k0.g1s0  signal=k0.g1o0
kernel      mul.n5
load        sram@0:1x64:f32 <- scratch.f32[0:1x64/64]  signal=k1.e1xl0
binary.mul  sram@512:1x64:f32 <- sram@0:1x64:f32, 0.5  wait=k1.e1xl0  signal=k1.e1xf0,k1.e1s0
store       scratch.f32[64:1x64/64] <- sram@512:1x64:f32  wait=k1.e1s0  signal=k1.e1o0
kernel      softmax.y
load        sram@0:4x16:f32 <- scratch.f32[64:4x16/16]  signal=k2.n1xl0
reduce.max  sram@1024:4x1:f32 <- sram@0:4x16:f32  wait=k2.n1xl0
binary.sub  sram@512:4x16:f32 <- sram@0:4x16:f32, sram@1024:4x1:f32  bcast=col
unary.exp   sram@512:4x16:f32 <- sram@512:4x16:f32
reduce.sum  sram@1088:4x1:f32 <- sram@512:4x16:f32  signal=k2.n1xf0
binary.div  sram@1152:4x16:f32 <- sram@512:4x16:f32, sram@1088:4x1:f32  bcast=col  signal=k2.n1s0
store       y[0:4x16/16] <- sram@1152:4x16:f32  wait=k2.n1s0  signal=k2.n1o0
