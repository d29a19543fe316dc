"""`--quantize int8 --sqnr-min DB`: int8 everywhere when it is predicted to meet the
floor, else the cheapest groups kept in a higher declared precision; rotated inputs
stay rotated in the mix, and the fake-quantized prediction models the rotated program."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np

from eqsat.interpreter import random_bindings
from eqsat.ops.rotation import hadamard
from eqsat.quant.auto import hardware_precisions, measure_choices, mixed_plan
from eqsat.quant.calibrate import calibration_samples
from eqsat.quant.floor import RotatedFakeQuant, apply_floor, floor_report, floor_summary
from eqsat.quant.passes import plan_quantization
from hwsim import load_hardware
from tests.quant.helpers import quantized, two_branch


def _setup(rotate: str = "none"):
    g = two_branch()
    names = {str(n.attr("name")) for _, n in g.params}
    params = {k: v for k, v in random_bindings(g, 0).items() if k in names}
    samples = calibration_samples(g, None)
    plan = plan_quantization(g, params, samples, "even", rotate=rotate)
    return g, params, samples, plan


def test_uniform_int8_is_kept_when_it_meets_the_floor() -> None:
    g, params, samples, plan = _setup()
    floor = apply_floor(g, params, plan, samples, load_hardware("edge"), 20.0)
    assert floor.plan is plan and not floor.kept
    assert min(floor.int8_predicted.values()) >= 20.0
    assert "int8 everywhere predicted" in floor_summary(floor)[0]


def test_a_floor_int8_misses_keeps_groups_in_a_higher_precision() -> None:
    g, params, samples, plan = _setup()
    hw = load_hardware("edge")
    uniform = apply_floor(g, params, plan, samples, hw, 0.0).int8_predicted["y"]
    target = uniform + 4.0
    floor = apply_floor(g, params, plan, samples, hw, target)
    assert floor.kept and all(c.precision not in ("int8", "f32") for c in floor.kept)
    assert any(c.precision == "int8" for c in floor.choices)  # not everything left int8
    assert floor.predicted["y"] >= target
    assigned = {i: c.precision for c in floor.choices for i in c.layers if c.precision != "f32"}
    for sample in samples:  # the floor holds on every calibration sample, not only the first
        fake = RotatedFakeQuant(g, plan, params, sample, "bf16", rotations={})
        assert fake.sqnr(assigned)["y"] >= target
    report = floor_report(floor)
    assert report["kept"] and report["uniform_int8_predicted_sqnr_db"]["y"] < target
    # end to end, as `eqsat simulate --quantize int8 --sqnr-min` runs it
    result, _ = quantized(g, sqnr_min=target, hw="edge")
    assert result.quant.floor is not None and result.quant.floor.kept
    assert result.quant.sqnr["y"] >= target - 1.0  # measured on an input calibration never saw


def test_rotated_inputs_stay_rotated_and_are_modelled() -> None:
    g, params, samples, plan = _setup(rotate="all")
    rotations = {r.act: r.block for r in plan.rotations if r.chosen}
    assert len(rotations) == 2
    hw = load_hardware("edge")
    fake = RotatedFakeQuant(g, plan, params, samples[0], "bf16", rotations=rotations)
    choices = measure_choices(g, hw, plan, fake, hardware_precisions(hw), params)
    # every group int8: the mix is the int8 pass's own graph, hadamards included
    mixed = mixed_plan(
        g, params, plan, [replace(c, precision="int8") for c in choices], "even", "bf16", rotations
    )
    assert Counter(n.op for _, n in mixed.graph) == Counter(n.op for _, n in plan.graph)
    # the prediction uses the int8 kernel's numbers: q(x H) - Z times the seeded H^T w
    for i in plan.layer_nodes:
        x, w = g.nodes[i].inputs
        scale, zp = plan.act_qparams[x]
        q = np.clip(np.rint(hadamard(fake.ref[x], rotations[x]) / scale) + zp, -128, 127)
        wname = str(g.nodes[w].attr("name"))
        kernel = ((q - zp) @ plan.params[f"{wname}.rot.q"]) * plan.params[f"{wname}.rot.s"]
        got = fake.layer_output(i, fake.ref[x], "int8")
        np.testing.assert_allclose(got, kernel, rtol=1e-4, atol=1e-4 * np.abs(kernel).max())
    unrotated = RotatedFakeQuant(g, plan, params, samples[0], "bf16", rotations={})
    assert not np.allclose(
        unrotated.layer_output(plan.layer_nodes[0], fake.ref[0], "int8"),
        fake.layer_output(plan.layer_nodes[0], fake.ref[0], "int8"),
    )
