// The `accel` dialect: the hwsim instruction set (hwsim/isa.py) as MLIR operations.
//
// Written by `eqsat compile MODEL --emit mlir-accel` (backend/mlir_accel/emit.py) and
// verified by xDSL (backend/mlir_accel/xdsl_irdl.py) or `iree-opt --irdl-file=` /
// `mlir-opt --irdl-file=`. One program is one func.func:
//   - DRAM buffers are SSA values of memref type: the program's inputs and outputs are
//     the function's arguments (argument attributes accel.name and accel.role), scratch
//     buffers are results of accel.dram_alloc. DMA ops take their buffer as an operand
//     and address it with a #accel.window (element offset, rows, cols, row stride).
//   - On-chip memory is statically allocated by the compiler: tiles are #accel.tile
//     attributes (memory, byte address, rows, cols, row stride in elements, dtype).
//   - Every instruction op carries its dependence tokens: `wait` and `signal`, arrays of
//     token names (counting semaphores between the load, compute and store queues).
//   - accel.kernel marks the start of a kernel (a barrier); the ops after it, up to the
//     next marker, are the kernel's instructions.
// IRDL has no optional attributes: every attribute listed is required, and
// `unary.OP` with an immediate is its own op, accel.unary_imm. A constraint value is
// used once: IRDL makes a constraint used twice require equal attributes.
irdl.dialect @accel {
  // #accel.tile<SPACE, ADDR, ROWS, COLS, STRIDE, DTYPE>: a ROWS x COLS region of
  // on-chip memory SPACE ("sram" scratchpad or "acc" accumulator) at byte address
  // ADDR, rows STRIDE elements apart, elements of DTYPE.
  irdl.attribute @tile {
    %space_1 = irdl.is "sram"
    %space_2 = irdl.is "acc"
    %space3 = irdl.any_of(%space_1, %space_2)
    %addr4 = irdl.base "#builtin.integer"
    %rows5 = irdl.base "#builtin.integer"
    %cols6 = irdl.base "#builtin.integer"
    %stride7 = irdl.base "#builtin.integer"
    %dtype_8 = irdl.is f32
    %dtype_9 = irdl.is bf16
    %dtype_10 = irdl.is i8
    %dtype_11 = irdl.is i32
    %dtype12 = irdl.any_of(%dtype_8, %dtype_9, %dtype_10, %dtype_11)
    irdl.parameters(space: %space3, addr: %addr4, rows: %rows5, cols: %cols6, stride: %stride7, dtype: %dtype12)
  }

  // #accel.window<OFFSET, ROWS, COLS, STRIDE>: ROWS x COLS elements of a DRAM buffer
  // (the memref operand of the op) from element OFFSET, rows STRIDE elements apart.
  irdl.attribute @window {
    %offset1 = irdl.base "#builtin.integer"
    %rows2 = irdl.base "#builtin.integer"
    %cols3 = irdl.base "#builtin.integer"
    %stride4 = irdl.base "#builtin.integer"
    irdl.parameters(offset: %offset1, rows: %rows2, cols: %cols3, stride: %stride4)
  }

  // kernel NAME: start of a kernel, a barrier over all queues.
  irdl.operation @kernel {
    %name1 = irdl.base "#builtin.string"
    %tokens2 = irdl.base "#builtin.array"
    %tokens3 = irdl.base "#builtin.array"
    irdl.attributes {"name" = %name1, "wait" = %tokens2, "signal" = %tokens3}
  }

  // A scratch DRAM buffer of the program (inputs and outputs are function arguments).
  irdl.operation @dram_alloc {
    %name1 = irdl.base "#builtin.string"
    %dram2 = irdl.base "!builtin.memref"
    irdl.results(buffer: %dram2)
    irdl.attributes {"name" = %name1}
  }

  // load: DMA of window `src` of DRAM buffer `buffer` into tile `dst` (load queue).
  irdl.operation @dma_load {
    %tile1 = irdl.base @accel::@tile
    %window2 = irdl.base @accel::@window
    %dram3 = irdl.base "!builtin.memref"
    %tokens4 = irdl.base "#builtin.array"
    %tokens5 = irdl.base "#builtin.array"
    irdl.operands(buffer: %dram3)
    irdl.attributes {"dst" = %tile1, "src" = %window2, "wait" = %tokens4, "signal" = %tokens5}
  }

  // gather: row r of `dst` is row index[r] of window `src` of `buffer` (load queue).
  irdl.operation @dma_gather {
    %tile1 = irdl.base @accel::@tile
    %window2 = irdl.base @accel::@window
    %tile3 = irdl.base @accel::@tile
    %dram4 = irdl.base "!builtin.memref"
    %tokens5 = irdl.base "#builtin.array"
    %tokens6 = irdl.base "#builtin.array"
    irdl.operands(buffer: %dram4)
    irdl.attributes {"dst" = %tile1, "src" = %window2, "index" = %tile3, "wait" = %tokens5, "signal" = %tokens6}
  }

  // loaddq: DMA of packed `bits`-bit weights (window `src` of i8 `buffer`) through the
  // load-path dequantizer into tile `dst`, times the group scales of tile `scales`.
  irdl.operation @dma_load_dq {
    %tile1 = irdl.base @accel::@tile
    %window2 = irdl.base @accel::@window
    %tile3 = irdl.base @accel::@tile
    %bits4 = irdl.base "#builtin.integer"
    %group5 = irdl.base "#builtin.integer"
    %phase6 = irdl.base "#builtin.integer"
    %fmt_7 = irdl.is "int"
    %fmt_8 = irdl.is "e4m3"
    %fmt9 = irdl.any_of(%fmt_7, %fmt_8)
    %dram10 = irdl.base "!builtin.memref"
    %tokens11 = irdl.base "#builtin.array"
    %tokens12 = irdl.base "#builtin.array"
    irdl.operands(buffer: %dram10)
    irdl.attributes {"dst" = %tile1, "src" = %window2, "scales" = %tile3, "bits" = %bits4, "group" = %group5, "phase" = %phase6, "fmt" = %fmt9, "wait" = %tokens11, "signal" = %tokens12}
  }

  // store: DMA of tile `src` (cropped) to window `dst` of DRAM buffer `buffer` (store queue).
  irdl.operation @dma_store {
    %window1 = irdl.base @accel::@window
    %tile2 = irdl.base @accel::@tile
    %dram3 = irdl.base "!builtin.memref"
    %tokens4 = irdl.base "#builtin.array"
    %tokens5 = irdl.base "#builtin.array"
    irdl.operands(buffer: %dram3)
    irdl.attributes {"dst" = %window1, "src" = %tile2, "wait" = %tokens4, "signal" = %tokens5}
  }

  // matmul: acc (= or +=) a @ b on the systolic array.
  irdl.operation @matmul {
    %tile1 = irdl.base @accel::@tile
    %tile2 = irdl.base @accel::@tile
    %tile3 = irdl.base @accel::@tile
    %mode_4 = irdl.is "overwrite"
    %mode_5 = irdl.is "accumulate"
    %mode6 = irdl.any_of(%mode_4, %mode_5)
    %tokens7 = irdl.base "#builtin.array"
    %tokens8 = irdl.base "#builtin.array"
    irdl.attributes {"acc" = %tile1, "a" = %tile2, "b" = %tile3, "mode" = %mode6, "wait" = %tokens7, "signal" = %tokens8}
  }

  // move: copy between accumulator and scratchpad with an activation, casting to dst;
  // queue "vector": issued to the vector queue, beside the compute queue (hwsim/isa.py).
  irdl.operation @move {
    %tile1 = irdl.base @accel::@tile
    %tile2 = irdl.base @accel::@tile
    %act_3 = irdl.is "none"
    %act_4 = irdl.is "relu"
    %act5 = irdl.any_of(%act_3, %act_4)
    %tokens6 = irdl.base "#builtin.array"
    %tokens7 = irdl.base "#builtin.array"
    %queue_8 = irdl.is "compute"
    %queue_9 = irdl.is "vector"
    %queue10 = irdl.any_of(%queue_8, %queue_9)
    irdl.attributes {"dst" = %tile1, "src" = %tile2, "act" = %act5, "queue" = %queue10, "wait" = %tokens6, "signal" = %tokens7}
  }

  // unary.OP: dst = OP(src) elementwise on the vector unit; queue as binary's.
  irdl.operation @unary {
    %op_1 = irdl.is "copy"
    %op_2 = irdl.is "relu"
    %op_3 = irdl.is "gelu"
    %op_4 = irdl.is "exp"
    %op_5 = irdl.is "neg"
    %op_6 = irdl.is "sqrt"
    %op_7 = irdl.is "rsqrt"
    %op_8 = irdl.is "reciprocal"
    %op_9 = irdl.is "sigmoid"
    %op_10 = irdl.is "tanh"
    %op_11 = irdl.is "scale"
    %op_12 = irdl.is "abs"
    %op_13 = irdl.is "erf"
    %op_14 = irdl.is "gelu_erf"
    %op_15 = irdl.is "log"
    %op_16 = irdl.is "sin"
    %op_17 = irdl.is "cos"
    %op_18 = irdl.is "floor"
    %op_19 = irdl.is "ceil"
    %op_20 = irdl.is "trunc"
    %op_21 = irdl.is "not"
    %op_22 = irdl.is "isnan"
    %op23 = irdl.any_of(%op_1, %op_2, %op_3, %op_4, %op_5, %op_6, %op_7, %op_8, %op_9, %op_10, %op_11, %op_12, %op_13, %op_14, %op_15, %op_16, %op_17, %op_18, %op_19, %op_20, %op_21, %op_22)
    %tile24 = irdl.base @accel::@tile
    %tile25 = irdl.base @accel::@tile
    %tokens26 = irdl.base "#builtin.array"
    %tokens27 = irdl.base "#builtin.array"
    %queue_28 = irdl.is "compute"
    %queue_29 = irdl.is "vector"
    %queue30 = irdl.any_of(%queue_28, %queue_29)
    irdl.attributes {"op" = %op23, "dst" = %tile24, "src" = %tile25, "queue" = %queue30, "wait" = %tokens26, "signal" = %tokens27}
  }

  // unary.OP with an immediate (`scale` multiplies by imm); queue as binary's.
  irdl.operation @unary_imm {
    %op_1 = irdl.is "copy"
    %op_2 = irdl.is "relu"
    %op_3 = irdl.is "gelu"
    %op_4 = irdl.is "exp"
    %op_5 = irdl.is "neg"
    %op_6 = irdl.is "sqrt"
    %op_7 = irdl.is "rsqrt"
    %op_8 = irdl.is "reciprocal"
    %op_9 = irdl.is "sigmoid"
    %op_10 = irdl.is "tanh"
    %op_11 = irdl.is "scale"
    %op_12 = irdl.is "abs"
    %op_13 = irdl.is "erf"
    %op_14 = irdl.is "gelu_erf"
    %op_15 = irdl.is "log"
    %op_16 = irdl.is "sin"
    %op_17 = irdl.is "cos"
    %op_18 = irdl.is "floor"
    %op_19 = irdl.is "ceil"
    %op_20 = irdl.is "trunc"
    %op_21 = irdl.is "not"
    %op_22 = irdl.is "isnan"
    %op23 = irdl.any_of(%op_1, %op_2, %op_3, %op_4, %op_5, %op_6, %op_7, %op_8, %op_9, %op_10, %op_11, %op_12, %op_13, %op_14, %op_15, %op_16, %op_17, %op_18, %op_19, %op_20, %op_21, %op_22)
    %tile24 = irdl.base @accel::@tile
    %tile25 = irdl.base @accel::@tile
    %imm26 = irdl.base "#builtin.float"
    %tokens27 = irdl.base "#builtin.array"
    %tokens28 = irdl.base "#builtin.array"
    %queue_29 = irdl.is "compute"
    %queue_30 = irdl.is "vector"
    %queue31 = irdl.any_of(%queue_29, %queue_30)
    irdl.attributes {"op" = %op23, "dst" = %tile24, "src" = %tile25, "imm" = %imm26, "queue" = %queue31, "wait" = %tokens27, "signal" = %tokens28}
  }

  // binary.OP: dst = OP(a, b); b is a tile or an immediate; bcast broadcasts a row or column of a;
  // queue "vector": issued to the vector queue, beside the compute queue (hwsim/isa.py).
  irdl.operation @binary {
    %op_1 = irdl.is "add"
    %op_2 = irdl.is "sub"
    %op_3 = irdl.is "mul"
    %op_4 = irdl.is "div"
    %op_5 = irdl.is "max"
    %op_6 = irdl.is "min"
    %op_7 = irdl.is "pow"
    %op_8 = irdl.is "eq"
    %op_9 = irdl.is "lt"
    %op_10 = irdl.is "le"
    %op_11 = irdl.is "gt"
    %op_12 = irdl.is "ge"
    %op_13 = irdl.is "and"
    %op_14 = irdl.is "or"
    %op_15 = irdl.is "xor"
    %op16 = irdl.any_of(%op_1, %op_2, %op_3, %op_4, %op_5, %op_6, %op_7, %op_8, %op_9, %op_10, %op_11, %op_12, %op_13, %op_14, %op_15)
    %tile17 = irdl.base @accel::@tile
    %tile18 = irdl.base @accel::@tile
    %tile19 = irdl.base @accel::@tile
    %imm20 = irdl.base "#builtin.float"
    %tile_or_imm21 = irdl.any_of(%tile19, %imm20)
    %bcast_22 = irdl.is "none"
    %bcast_23 = irdl.is "row"
    %bcast_24 = irdl.is "col"
    %bcast25 = irdl.any_of(%bcast_22, %bcast_23, %bcast_24)
    %tokens26 = irdl.base "#builtin.array"
    %tokens27 = irdl.base "#builtin.array"
    %queue_28 = irdl.is "compute"
    %queue_29 = irdl.is "vector"
    %queue30 = irdl.any_of(%queue_28, %queue_29)
    irdl.attributes {"op" = %op16, "dst" = %tile17, "a" = %tile18, "b" = %tile_or_imm21, "bcast" = %bcast25, "queue" = %queue30, "wait" = %tokens26, "signal" = %tokens27}
  }

  // fma: dst = a * b + c, fused (rounded once to f32); b and c are tiles or immediates,
  // each tile dst's shape, a row or a column of it (broadcast by its shape); queue as
  // binary's.
  irdl.operation @fma {
    %tile1 = irdl.base @accel::@tile
    %tile2 = irdl.base @accel::@tile
    %tile3 = irdl.base @accel::@tile
    %imm4 = irdl.base "#builtin.float"
    %tile_or_imm5 = irdl.any_of(%tile3, %imm4)
    %tile6 = irdl.base @accel::@tile
    %imm7 = irdl.base "#builtin.float"
    %tile_or_imm8 = irdl.any_of(%tile6, %imm7)
    %queue_9 = irdl.is "compute"
    %queue_10 = irdl.is "vector"
    %queue11 = irdl.any_of(%queue_9, %queue_10)
    %tokens12 = irdl.base "#builtin.array"
    %tokens13 = irdl.base "#builtin.array"
    irdl.attributes {"dst" = %tile1, "a" = %tile2, "b" = %tile_or_imm5, "c" = %tile_or_imm8, "queue" = %queue11, "wait" = %tokens12, "signal" = %tokens13}
  }

  // select: dst = a where cond != 0 else b; a and b are tiles or immediates.
  irdl.operation @select {
    %tile1 = irdl.base @accel::@tile
    %tile2 = irdl.base @accel::@tile
    %tile3 = irdl.base @accel::@tile
    %imm4 = irdl.base "#builtin.float"
    %tile_or_imm5 = irdl.any_of(%tile3, %imm4)
    %tile6 = irdl.base @accel::@tile
    %imm7 = irdl.base "#builtin.float"
    %tile_or_imm8 = irdl.any_of(%tile6, %imm7)
    %tokens9 = irdl.base "#builtin.array"
    %tokens10 = irdl.base "#builtin.array"
    irdl.attributes {"dst" = %tile1, "cond" = %tile2, "a" = %tile_or_imm5, "b" = %tile_or_imm8, "wait" = %tokens9, "signal" = %tokens10}
  }

  // reduce.OP: dst[rows x 1] = OP over each row of src; queue as binary's.
  irdl.operation @reduce {
    %op_1 = irdl.is "sum"
    %op_2 = irdl.is "max"
    %op3 = irdl.any_of(%op_1, %op_2)
    %tile4 = irdl.base @accel::@tile
    %tile5 = irdl.base @accel::@tile
    %tokens6 = irdl.base "#builtin.array"
    %tokens7 = irdl.base "#builtin.array"
    %queue_8 = irdl.is "compute"
    %queue_9 = irdl.is "vector"
    %queue10 = irdl.any_of(%queue_8, %queue_9)
    irdl.attributes {"op" = %op3, "dst" = %tile4, "src" = %tile5, "queue" = %queue10, "wait" = %tokens6, "signal" = %tokens7}
  }

  // transpose: dst[cols x rows] = src^T on the vector unit; queue as binary's.
  irdl.operation @transpose {
    %tile1 = irdl.base @accel::@tile
    %tile2 = irdl.base @accel::@tile
    %tokens3 = irdl.base "#builtin.array"
    %tokens4 = irdl.base "#builtin.array"
    %queue_5 = irdl.is "compute"
    %queue_6 = irdl.is "vector"
    %queue7 = irdl.any_of(%queue_5, %queue_6)
    irdl.attributes {"dst" = %tile1, "src" = %tile2, "queue" = %queue7, "wait" = %tokens3, "signal" = %tokens4}
  }

  // requantize: dst(i8) = sat(round(src * multiplier / 2**shift) + zero_point).
  irdl.operation @requantize {
    %tile1 = irdl.base @accel::@tile
    %tile2 = irdl.base @accel::@tile
    %mult3 = irdl.base "#builtin.integer"
    %shift4 = irdl.base "#builtin.integer"
    %zp5 = irdl.base "#builtin.integer"
    %round_6 = irdl.is "even"
    %round_7 = irdl.is "away"
    %round8 = irdl.any_of(%round_6, %round_7)
    %tokens9 = irdl.base "#builtin.array"
    %tokens10 = irdl.base "#builtin.array"
    irdl.attributes {"dst" = %tile1, "src" = %tile2, "multiplier" = %mult3, "shift" = %shift4, "zero_point" = %zp5, "rounding" = %round8, "wait" = %tokens9, "signal" = %tokens10}
  }

  // custom.NAME: dst = the hardware file's declared instruction NAME of srcs (an array
  // of #accel.tile, each dst's shape, a row or a column) on the vector unit.
  irdl.operation @custom {
    %name1 = irdl.base "#builtin.string"
    %tile2 = irdl.base @accel::@tile
    %tiles3 = irdl.base "#builtin.array"
    %tokens4 = irdl.base "#builtin.array"
    %tokens5 = irdl.base "#builtin.array"
    irdl.attributes {"name" = %name1, "dst" = %tile2, "srcs" = %tiles3, "wait" = %tokens4, "signal" = %tokens5}
  }
}
