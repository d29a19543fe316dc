"""The compiler's intermediate representation.

`eqsat.ir.types` (dtypes, tensor types) is imported by the op registry;
`eqsat.ir.graph` (the dataflow graph) imports the registry. Import them directly.
"""
