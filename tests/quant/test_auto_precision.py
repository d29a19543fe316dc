"""`--quantize auto --sqnr-min DB`: per-layer sensitivity, the noise-additive
prediction, the greedy choice, and the plan that follows it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from eqsat.interpreter import random_bindings
from eqsat.quant.auto import LayerChoice, choose_layers, fake_weight, predicted_sqnr
from eqsat.quant.calibrate import calibration_samples
from eqsat.quant.cli import int8_kernels
from eqsat.quant.passes import plan_quantization
from tests.quant.helpers import model, quantized


def test_noise_powers_add() -> None:
    assert predicted_sqnr([40.0, 40.0]) == pytest.approx(40.0 - 10 * math.log10(2))
    assert predicted_sqnr([30.0, math.inf]) == pytest.approx(30.0)
    assert predicted_sqnr([]) == math.inf


def test_greedy_takes_the_most_cycles_per_noise_within_budget() -> None:
    layers = [
        LayerChoice(0, "a", 40.0, 1000, 200),  # saves 800 for 1e-4 noise
        LayerChoice(1, "b", 36.0, 1000, 100),  # saves 900 for 2.5e-4: alone fits 35 dB
        LayerChoice(2, "c", 50.0, 300, 200),  # saves 100 for 1e-5
        LayerChoice(3, "d", 60.0, 100, 150),  # slower in int8: never chosen
    ]
    chosen = {c.weight for c in choose_layers(layers, 35.0) if c.int8}
    # ratios: c 1e7, a 8e6, b 3.6e6; a + c = 38.8 dB; adding b would give 34.1 dB
    assert chosen == {"a", "c"}
    assert predicted_sqnr([40.0, 50.0]) >= 35.0 > predicted_sqnr([40.0, 50.0, 36.0])
    assert {c.weight for c in choose_layers(layers, 0.0) if c.int8} == {"a", "b", "c"}


def test_fake_weight_is_the_planned_int8_weight() -> None:
    g = model("mlp")
    bind = random_bindings(g, 0)
    params = {k: v for k, v in bind.items() if k != "x"}
    plan = plan_quantization(g, params, calibration_samples(g, None), "even")
    w = params["w1"]
    ws = np.abs(w).max(axis=0, keepdims=True) / 127
    np.testing.assert_allclose(
        fake_weight(w, conv=False), plan.params["w1.q"].astype(np.float32) * ws, rtol=1e-6
    )


@pytest.mark.parametrize(("budget", "expect"), [(200.0, "none"), (0.0, "all"), (40.0, "some")])
def test_auto_on_the_mlp(budget, expect) -> None:
    q, _ = quantized(model("mlp"), quantize="auto", sqnr_min=budget, hw="edge")
    choices = q.quant.layer_choices
    assert len(choices) == 3
    n = sum(c.int8 for c in choices)
    assert int8_kernels(q.graph) == n == len(q.quant.plan.layers)
    if expect == "none":
        assert n == 0 and q.quant.sqnr["probs"] == math.inf
    elif expect == "all":  # every layer int8 makes faster (the cost model's prices)
        assert n == sum(c.saved_cycles > 0 for c in choices) >= 2
    else:
        assert 0 < n < 3 or min(c.sensitivity_db for c in choices) >= 45.0
        predicted = predicted_sqnr([c.sensitivity_db for c in choices if c.int8])
        assert predicted >= budget
        # the prediction is the measurement, within 1.5 dB
        assert q.quant.sqnr["probs"] == pytest.approx(predicted, abs=1.5)
