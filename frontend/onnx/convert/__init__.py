"""The converters: one function per ONNX op (or family), registered by op type in
registry.CONVERTERS.

A converter gets a `Cx` (the node, its input values, its attributes, the op's schema
version) and returns the values of the node's outputs, writing eqsat statements
through `cx.emit`. What it cannot express it reports with `ConvertError`, which the
importer shows at the node with what is supported instead. Importing this package
imports every converter module, so that they register.
"""

from frontend.onnx.convert import (  # noqa: F401
    contrib,
    conv_transpose,
    elementwise,
    linalg,
    nn,
    quant,
    resize,
    tensor,
)
