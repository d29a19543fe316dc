func.func @main(%x: tensor<8x64xf32> loc("tests/mlir/golden/fused.model":3:3), %w: tensor<64x32xf32> loc("tests/mlir/golden/fused.model":4:3), %b: tensor<32xf32> loc("tests/mlir/golden/fused.model":5:3)) -> (tensor<8x32xf32>) {
  // y: TK=48 does not divide K=64: one product over all of K
  %empty = tensor.empty() : tensor<8x32xf32> loc("tests/mlir/golden/fused.model":6:3)
  %cst = arith.constant 0.0 : f32 loc("tests/mlir/golden/fused.model":6:3)
  %fill = linalg.fill ins(%cst : f32) outs(%empty : tensor<8x32xf32>) -> tensor<8x32xf32> loc("tests/mlir/golden/fused.model":6:3)
  %y_matmul = linalg.matmul ins(%x, %w : tensor<8x64xf32>, tensor<64x32xf32>) outs(%fill : tensor<8x32xf32>) -> tensor<8x32xf32> loc("tests/mlir/golden/fused.model":6:3)
  %empty_1 = tensor.empty() : tensor<8x32xf32> loc("tests/mlir/golden/fused.model":6:3)
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y_matmul, %b : tensor<8x32xf32>, tensor<32xf32>) outs(%empty_1 : tensor<8x32xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in, %in_1 : f32
    %cst_1 = arith.constant 0.0 : f32
    %s_1 = arith.maximumf %s, %cst_1 : f32
    linalg.yield %s_1 : f32
  } -> tensor<8x32xf32> loc("tests/mlir/golden/fused.model":6:3)
  return %y : tensor<8x32xf32>
}
