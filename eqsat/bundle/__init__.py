"""One compile for a range of shapes: buckets, masking, bundles and the dispatcher.

bundle = compile_bundle("model.model", DimRange("S", 1, 512), [64, 128, 256, 512], "edge")
save_bundle(bundle, "model.eqsb"); bundle = load_bundle("model.eqsb")
run = run_bundle(bundle, {"S": 300}, inputs, verify=True)  # bucket 512, outputs cut to 300
"""

from eqsat.bundle.build import BucketProgram, Bundle, compile_bundle
from eqsat.bundle.choose import BucketChoice, choose_buckets, read_lengths
from eqsat.bundle.dispatch import BundleRun, run_bundle
from eqsat.bundle.errors import BundleError, PaddingError
from eqsat.bundle.fileformat import is_bundle, load_bundle, save_bundle
from eqsat.bundle.masking import PaddedModel, pad_model
from eqsat.bundle.ranges import DimRange, default_buckets
from eqsat.bundle.source import ModelSource

__all__ = [
    "BucketChoice",
    "BucketProgram",
    "Bundle",
    "BundleError",
    "BundleRun",
    "DimRange",
    "ModelSource",
    "PaddedModel",
    "PaddingError",
    "choose_buckets",
    "compile_bundle",
    "default_buckets",
    "is_bundle",
    "load_bundle",
    "pad_model",
    "read_lengths",
    "run_bundle",
    "save_bundle",
]
