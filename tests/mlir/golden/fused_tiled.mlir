func.func @main(%x: tensor<8x64xf32> loc("tests/mlir/golden/fused.model":3:3), %w: tensor<64x32xf32> loc("tests/mlir/golden/fused.model":4:3), %b: tensor<32xf32> loc("tests/mlir/golden/fused.model":5:3)) -> (tensor<8x32xf32>) {
  %y = tensor.expand_shape %b [[0, 1]] output_shape [1, 32] : tensor<32xf32> into tensor<1x32xf32> loc("tests/mlir/golden/fused.model":6:3)
  %empty = tensor.empty() : tensor<8x32xf32> loc("tests/mlir/golden/fused.model":6:3)
  %c = arith.constant 0 : index loc("tests/mlir/golden/fused.model":6:3)
  %c_1 = arith.constant 8 : index loc("tests/mlir/golden/fused.model":6:3)
  %c_2 = arith.constant 32 : index loc("tests/mlir/golden/fused.model":6:3)
  %c_3 = arith.constant 8 : index loc("tests/mlir/golden/fused.model":6:3)
  %c_4 = arith.constant 16 : index loc("tests/mlir/golden/fused.model":6:3)
  %y_1 = scf.for %i = %c to %c_1 step %c_3 iter_args(%acc = %empty) -> (tensor<8x32xf32>) {
    %y.row = scf.for %j = %c to %c_2 step %c_4 iter_args(%acc_1 = %acc) -> (tensor<8x32xf32>) {
      %y.rows = tensor.extract_slice %x[%i, 0] [8, 64] [1, 1] : tensor<8x64xf32> to tensor<8x64xf32> loc("tests/mlir/golden/fused.model":6:3)
      %y.cols = tensor.extract_slice %w[0, %j] [64, 16] [1, 1] : tensor<64x32xf32> to tensor<64x16xf32> loc("tests/mlir/golden/fused.model":6:3)
      %y.epilogue = tensor.extract_slice %y[0, %j] [1, 16] [1, 1] : tensor<1x32xf32> to tensor<1x16xf32> loc("tests/mlir/golden/fused.model":6:3)
      %empty_1 = tensor.empty() : tensor<8x16xf32> loc("tests/mlir/golden/fused.model":6:3)
      %cst = arith.constant 0.0 : f32 loc("tests/mlir/golden/fused.model":6:3)
      %fill = linalg.fill ins(%cst : f32) outs(%empty_1 : tensor<8x16xf32>) -> tensor<8x16xf32> loc("tests/mlir/golden/fused.model":6:3)
      %y.tile_matmul = linalg.matmul ins(%y.rows, %y.cols : tensor<8x64xf32>, tensor<64x16xf32>) outs(%fill : tensor<8x16xf32>) -> tensor<8x16xf32> loc("tests/mlir/golden/fused.model":6:3)
      %empty_2 = tensor.empty() : tensor<8x16xf32> loc("tests/mlir/golden/fused.model":6:3)
      %y.tile = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y.tile_matmul, %y.epilogue : tensor<8x16xf32>, tensor<1x16xf32>) outs(%empty_2 : tensor<8x16xf32>) {
      ^bb0(%in: f32, %in_1: f32, %out: f32):
        %s = arith.addf %in, %in_1 : f32
        %cst_1 = arith.constant 0.0 : f32
        %s_1 = arith.maximumf %s, %cst_1 : f32
        linalg.yield %s_1 : f32
      } -> tensor<8x16xf32> loc("tests/mlir/golden/fused.model":6:3)
      %y.placed = tensor.insert_slice %y.tile into %acc_1[%i, %j] [8, 16] [1, 1] : tensor<8x16xf32> into tensor<8x32xf32> loc("tests/mlir/golden/fused.model":6:3)
      scf.yield %y.placed : tensor<8x32xf32>
    } loc("tests/mlir/golden/fused.model":6:3)
    scf.yield %y.row : tensor<8x32xf32>
  } loc("tests/mlir/golden/fused.model":6:3)
  return %y_1 : tensor<8x32xf32>
}
