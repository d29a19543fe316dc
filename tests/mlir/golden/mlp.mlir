func.func @main(%x: tensor<8x784xf32> loc("examples/mlp.model":4:3), %w1: tensor<784x256xf32> loc("examples/mlp.model":5:3), %b1: tensor<256xf32> loc("examples/mlp.model":6:3), %w2: tensor<256x128xf32> loc("examples/mlp.model":7:3), %b2: tensor<128xf32> loc("examples/mlp.model":8:3), %w3: tensor<128x10xf32> loc("examples/mlp.model":9:3), %b3: tensor<10xf32> loc("examples/mlp.model":10:3)) -> (tensor<8x10xf32>) {
  %empty = tensor.empty() : tensor<8x256xf32> loc("examples/mlp.model":12:3)
  %cst = arith.constant 0.0 : f32 loc("examples/mlp.model":12:3)
  %fill = linalg.fill ins(%cst : f32) outs(%empty : tensor<8x256xf32>) -> tensor<8x256xf32> loc("examples/mlp.model":12:3)
  %h1.matmul = linalg.matmul ins(%x, %w1 : tensor<8x784xf32>, tensor<784x256xf32>) outs(%fill : tensor<8x256xf32>) -> tensor<8x256xf32> loc("examples/mlp.model":12:3)
  %empty_1 = tensor.empty() : tensor<8x256xf32> loc("examples/mlp.model":12:3)
  %h1.add = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%h1.matmul, %b1 : tensor<8x256xf32>, tensor<256xf32>) outs(%empty_1 : tensor<8x256xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %s = arith.addf %in, %in_1 : f32
    linalg.yield %s : f32
  } -> tensor<8x256xf32> loc("examples/mlp.model":12:3)
  %empty_2 = tensor.empty() : tensor<8x256xf32> loc("examples/mlp.model":12:3)
  %h1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%h1.add : tensor<8x256xf32>) outs(%empty_2 : tensor<8x256xf32>) {
  ^bb0(%in_2: f32, %out_1: f32):
    %cst_1 = arith.constant 0.0 : f32
    %s_1 = arith.maximumf %in_2, %cst_1 : f32
    linalg.yield %s_1 : f32
  } -> tensor<8x256xf32> loc("examples/mlp.model":12:3)
  %empty_3 = tensor.empty() : tensor<8x128xf32> loc("examples/mlp.model":13:3)
  %cst_2 = arith.constant 0.0 : f32 loc("examples/mlp.model":13:3)
  %fill_1 = linalg.fill ins(%cst_2 : f32) outs(%empty_3 : tensor<8x128xf32>) -> tensor<8x128xf32> loc("examples/mlp.model":13:3)
  %h2.matmul = linalg.matmul ins(%h1, %w2 : tensor<8x256xf32>, tensor<256x128xf32>) outs(%fill_1 : tensor<8x128xf32>) -> tensor<8x128xf32> loc("examples/mlp.model":13:3)
  %empty_4 = tensor.empty() : tensor<8x128xf32> loc("examples/mlp.model":13:3)
  %h2.add = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%h2.matmul, %b2 : tensor<8x128xf32>, tensor<128xf32>) outs(%empty_4 : tensor<8x128xf32>) {
  ^bb0(%in_3: f32, %in_4: f32, %out_2: f32):
    %s_2 = arith.addf %in_3, %in_4 : f32
    linalg.yield %s_2 : f32
  } -> tensor<8x128xf32> loc("examples/mlp.model":13:3)
  %empty_5 = tensor.empty() : tensor<8x128xf32> loc("examples/mlp.model":13:3)
  %h2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%h2.add : tensor<8x128xf32>) outs(%empty_5 : tensor<8x128xf32>) {
  ^bb0(%in_5: f32, %out_3: f32):
    %cst_3 = arith.constant 0.0 : f32
    %s_3 = arith.maximumf %in_5, %cst_3 : f32
    linalg.yield %s_3 : f32
  } -> tensor<8x128xf32> loc("examples/mlp.model":13:3)
  %empty_6 = tensor.empty() : tensor<8x10xf32> loc("examples/mlp.model":14:3)
  %cst_4 = arith.constant 0.0 : f32 loc("examples/mlp.model":14:3)
  %fill_2 = linalg.fill ins(%cst_4 : f32) outs(%empty_6 : tensor<8x10xf32>) -> tensor<8x10xf32> loc("examples/mlp.model":14:3)
  %logits.matmul = linalg.matmul ins(%h2, %w3 : tensor<8x128xf32>, tensor<128x10xf32>) outs(%fill_2 : tensor<8x10xf32>) -> tensor<8x10xf32> loc("examples/mlp.model":14:3)
  %empty_7 = tensor.empty() : tensor<8x10xf32> loc("examples/mlp.model":14:3)
  %logits = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%logits.matmul, %b3 : tensor<8x10xf32>, tensor<10xf32>) outs(%empty_7 : tensor<8x10xf32>) {
  ^bb0(%in_6: f32, %in_7: f32, %out_4: f32):
    %s_4 = arith.addf %in_6, %in_7 : f32
    linalg.yield %s_4 : f32
  } -> tensor<8x10xf32> loc("examples/mlp.model":14:3)
  %empty_8 = tensor.empty() : tensor<8xf32> loc("examples/mlp.model":15:3)
  %cst_5 = arith.constant 0xFF800000 : f32 loc("examples/mlp.model":15:3)
  %fill_3 = linalg.fill ins(%cst_5 : f32) outs(%empty_8 : tensor<8xf32>) -> tensor<8xf32> loc("examples/mlp.model":15:3)
  %probs_max = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%logits : tensor<8x10xf32>) outs(%fill_3 : tensor<8xf32>) {
  ^bb0(%in_8: f32, %out_5: f32):
    %s_5 = arith.maximumf %out_5, %in_8 : f32
    linalg.yield %s_5 : f32
  } -> tensor<8xf32> loc("examples/mlp.model":15:3)
  %empty_9 = tensor.empty() : tensor<8x10xf32> loc("examples/mlp.model":15:3)
  %probs_exp = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%logits, %probs_max : tensor<8x10xf32>, tensor<8xf32>) outs(%empty_9 : tensor<8x10xf32>) {
  ^bb0(%in_9: f32, %in_10: f32, %out_6: f32):
    %s_6 = arith.subf %in_9, %in_10 : f32
    %s_7 = math.exp %s_6 : f32
    linalg.yield %s_7 : f32
  } -> tensor<8x10xf32> loc("examples/mlp.model":15:3)
  %empty_10 = tensor.empty() : tensor<8xf32> loc("examples/mlp.model":15:3)
  %cst_6 = arith.constant 0.0 : f32 loc("examples/mlp.model":15:3)
  %fill_4 = linalg.fill ins(%cst_6 : f32) outs(%empty_10 : tensor<8xf32>) -> tensor<8xf32> loc("examples/mlp.model":15:3)
  %probs_sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%probs_exp : tensor<8x10xf32>) outs(%fill_4 : tensor<8xf32>) {
  ^bb0(%in_11: f32, %out_7: f32):
    %s_8 = arith.addf %out_7, %in_11 : f32
    linalg.yield %s_8 : f32
  } -> tensor<8xf32> loc("examples/mlp.model":15:3)
  %empty_11 = tensor.empty() : tensor<8x10xf32> loc("examples/mlp.model":15:3)
  %probs = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%probs_exp, %probs_sum : tensor<8x10xf32>, tensor<8xf32>) outs(%empty_11 : tensor<8x10xf32>) {
  ^bb0(%in_12: f32, %in_13: f32, %out_8: f32):
    %s_9 = arith.divf %in_12, %in_13 : f32
    linalg.yield %s_9 : f32
  } -> tensor<8x10xf32> loc("examples/mlp.model":15:3)
  return %probs : tensor<8x10xf32>
}
