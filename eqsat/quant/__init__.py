"""Int8 post-training quantization (`--quantize int8`).

The scheme: weights symmetric per output channel (ws[n] = max|w[:, n]| / 127), activations
asymmetric per tensor (scale and zero point from a calibrated range), i8 x i8 products
accumulated in i32, the bias added in i32 at scale S * ws[n], and i32 -> i8
requantization by a fixed-point multiplier and shift per channel with the hardware's
rounding (`rounding` in the hardware description; eqsat.quant.fixedpoint).

Division of labour (scales are data, rules are rules):

1. calibrate.py runs the float model on sample inputs (a `--calibrate FILE.npz`, or
   seeded random inputs, with a warning) and records each matmul input's range
   (min/max, or percentiles).
2. passes.py chooses each range's scale and zero point (qparams.py) and rewrites the
   model: the input of every quantizable matmul (f32, weight a rank-2 param) or
   conv2d (f32, weight a param) becomes
   observe(x, scale=S, zero_point=Z, rounding=R), an annotation whose value is x.
   It also evaluates, with the reference interpreter, the terms rules/quant.rules
   will build from the weights (quantized weights, channel scales, i32 biases), stores
   them as new params, and seeds the e-graph with `term = param` for each, so the
   extracted program reads them instead of computing them.
3. rules/quant.rules (approximate rules, run only with --quantize) turn matmuls into
   qmatmul (convolutions into qconv2d), fold biases into the accumulator, fold dequantize-quantize into
   requantize_pc, and fuse everything into int8 kernels; extraction decides where it
   pays on the target.
4. sqnr.py measures each output of the extracted program against the float model.
"""

from eqsat.quant.calibrate import CalibrationError, calibration_samples, observe_ranges
from eqsat.quant.fixedpoint import multiplier_shift, requantize_fixed
from eqsat.quant.passes import QuantPlan, plan_quantization
from eqsat.quant.sqnr import sqnr_db

__all__ = [
    "CalibrationError",
    "QuantPlan",
    "calibration_samples",
    "multiplier_shift",
    "observe_ranges",
    "plan_quantization",
    "requantize_fixed",
    "sqnr_db",
]
