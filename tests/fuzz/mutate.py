"""Mutations a hostile user (or a broken tool upstream) makes to an input file.

Every mutator takes a `random.Random` and a valid seed input and returns the bytes
of a file: token edits of text formats, deep nesting, numbers out of range, names
holding egglog syntax, byte flips and truncations, structural edits of JSON, and
npz files whose members lie about their contents.
"""

from __future__ import annotations

import io
import json
import random
import re
import zipfile

import numpy as np

TOKEN = re.compile(
    r"\s+|#[^\n]*|[A-Za-z_][A-Za-z0-9_.]*|[+-]?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|.", re.S
)
ODD_TOKENS = [
    "0", "-1", "1e999", "-1e999", "nan", "inf", "1e-320", "9" * 400, "18446744073709551616",
    "(run 1000)", '"', "\\", ")", "(", "[", "]", "{", "}", ",", ":", "=", ";", "\n", "\x00",
    "\u00e9", "\ufeff", "\U0001f600", "(push)", "(pop)", '(include "x")', "(delete (Add a b))",
]  # fmt: skip


def text_tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


def mutate_tokens(rng: random.Random, text: str, rounds: int | None = None) -> str:
    """1-4 token edits: delete, duplicate, swap, replace by a token of the same text or
    an odd one, or split a token with odd characters."""
    toks = text_tokens(text)
    vocab = list({t for t in toks if not t.isspace()}) or ["x"]
    for _ in range(rounds or rng.randint(1, 4)):
        if not toks:
            toks.append(rng.choice(ODD_TOKENS))
            continue
        i = rng.randrange(len(toks))
        kind = rng.randrange(6)
        if kind == 0:
            del toks[i]
        elif kind == 1:
            toks.insert(i, toks[i])
        elif kind == 2:
            j = rng.randrange(len(toks))
            toks[i], toks[j] = toks[j], toks[i]
        elif kind == 3:
            toks[i] = rng.choice(vocab)
        elif kind == 4:
            toks[i] = rng.choice(ODD_TOKENS)
        else:
            k = rng.randrange(len(toks[i]) + 1)
            toks[i] = toks[i][:k] + rng.choice(ODD_TOKENS) + toks[i][k:]
    return "".join(toks)


def deep_nesting(rng: random.Random, text: str) -> str:
    """An expression nested hundreds or thousands deep where the text has a call."""
    depth = rng.choice([100, 500, 2000, 20000])
    m = re.search(r"=\s*([a-z_0-9]+)\(([A-Za-z_][A-Za-z0-9_]*)", text)
    if not m:
        return text + "(" * depth
    op, arg = m.group(1), m.group(2)
    nested = f"{op}(" * depth + arg + ")" * depth
    return text[: m.start(1)] + nested + text[m.end(2) + 1 :] if rng.random() < 0.8 else nested


def rename_with_syntax(rng: random.Random, text: str) -> str:
    """Every occurrence of one name replaced by a name holding egglog syntax (where
    the format allows such a name, the run must treat it as data)."""
    names = sorted({t for t in text_tokens(text) if re.fullmatch(r"[A-Za-z_]\w*", t)})
    if not names:
        return text
    name = rng.choice(names)
    evil = rng.choice(["x(run 1000)", 'x"y', "x)(y", "x\\y", "x;y", "x y", "(push)"])
    return re.sub(rf"\b{re.escape(name)}\b", lambda _m: evil, text)


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """Flip, drop or insert bytes, or truncate."""
    b = bytearray(data)
    kind = rng.randrange(4)
    if kind == 0 and b:
        return bytes(b[: rng.randrange(len(b))])
    for _ in range(rng.randint(1, 8)):
        if not b:
            b.append(rng.randrange(256))
            continue
        i = rng.randrange(len(b))
        if kind == 1:
            b[i] = rng.randrange(256)
        elif kind == 2:
            del b[i]
        else:
            b.insert(i, rng.randrange(256))
    return bytes(b)


def mutate_text(rng: random.Random, text: str) -> bytes:
    """Any text format: token edits mostly, sometimes nesting, names or raw bytes."""
    r = rng.random()
    if r < 0.6:
        return mutate_tokens(rng, text).encode("utf-8", "surrogatepass")
    if r < 0.7:
        return deep_nesting(rng, text).encode()
    if r < 0.8:
        return rename_with_syntax(rng, text).encode()
    if r < 0.97:
        return mutate_bytes(rng, text.encode())
    return bytes(rng.randrange(256) for _ in range(rng.randint(0, 4096)))


_ODD_VALUES = [
    None, True, -1, 0, 2**64, -(2**63) - 1, 1.5, "", "x(run 1000)", [], {}, [[[]]],
    "1e400", "nan", float("inf"), float("nan"), -1e308,
]  # fmt: skip


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def mutate_json(rng: random.Random, text: str) -> bytes:
    """Structural edits of a JSON document, or text edits of it."""
    if rng.random() < 0.25:
        if rng.random() < 0.3:
            depth = rng.choice([1000, 100_000])
            return ("[" * depth + "]" * depth).encode()
        if rng.random() < 0.3:
            return re.sub(
                r'"cost": [0-9.e+-]+', '"cost": 1e400', text, count=rng.randint(1, 3)
            ).encode()
        return mutate_bytes(rng, text.encode())
    doc = json.loads(text)
    paths = list(_paths(doc))
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(paths)
        if not path:
            continue
        parent = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            kind = rng.randrange(3)
            if kind == 0 and isinstance(parent, dict):
                del parent[path[-1]]
            elif kind == 1 and isinstance(parent, list):
                parent.append(parent[path[-1]])
            else:
                parent[path[-1]] = rng.choice(_ODD_VALUES)
        except (KeyError, IndexError, TypeError):
            continue
    return json.dumps(doc, allow_nan=True).encode()


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, allow_pickle=True)
    return buf.getvalue()


def _zip(members: dict[str, bytes], compress: bool = False) -> bytes:
    buf = io.BytesIO()
    mode = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(buf, "w", mode) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def mutate_npz(rng: random.Random, arrays: dict[str, np.ndarray]) -> bytes:
    """An npz of `arrays` with one member lying: wrong shape, dtype or name, NaN,
    a pickled object, a header declaring a huge shape, random bytes, a zip bomb; or
    the whole file damaged."""
    members = {f"{k}.npy": _npy(v) for k, v in arrays.items()}
    name = rng.choice(sorted(members))
    key = name[: -len(".npy")]
    value = arrays[key]
    kind = rng.randrange(11)
    if kind == 0:
        members[name] = _npy(
            np.zeros(tuple(d + rng.choice([-1, 1, 7]) for d in value.shape) or (2,), value.dtype)
        )
    elif kind == 1:
        members[name] = _npy(
            value.astype(rng.choice([np.float16, np.int64, np.complex64, np.bool_, np.uint8]))
        )
    elif kind == 2:
        members[rng.choice(["typo.npy", key + "_.npy", "x(run 1000).npy"])] = members.pop(name)
    elif kind == 3:
        bad = value.astype(np.float32).copy()
        bad.flat[rng.randrange(max(bad.size, 1))] = rng.choice([np.nan, np.inf, -np.inf])
        members[name] = _npy(bad)
    elif kind == 4:
        members[name] = _npy(np.array([{"a": 1}, None], dtype=object))
    elif kind == 5:
        header = _npy(value)
        members[name] = header.replace(repr(value.shape).encode(), b"(100000000000, 784)", 1)
    elif kind == 6:
        members[name] = bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
    elif kind == 7:  # a member that inflates far beyond its declared shape
        members[name] = _npy(value)[:128] + b"\0" * 50_000_000
        return _zip(members, compress=True)
    elif kind == 8:
        return _npy(value)  # a plain .npy given as .npz
    elif kind == 9:
        return b""
    else:
        return mutate_bytes(rng, _zip(members))
    return _zip(members)


def mutate_onnx(rng: random.Random, data: bytes) -> bytes:
    """Protobuf-level edits of an ONNX model (names with egglog syntax, external data
    pointing out of the folder, odd dims and attributes, unknown ops, dropped
    initializers), or byte damage."""
    import onnx

    if rng.random() < 0.3:
        return mutate_bytes(rng, data)
    model = onnx.load_from_string(data)
    g = model.graph
    kind = rng.randrange(7)
    if kind == 0 and g.node:
        node = rng.choice(g.node)
        evil = rng.choice(['a"(run 1000)', "x)(y", "n\\n", "(push)"])
        old = node.output[0]
        for n in g.node:
            n.input[:] = [evil if i == old else i for i in n.input]
        node.output[0] = evil
        for o in g.output:
            if o.name == old:
                o.name = evil
    elif kind == 1 and g.initializer:
        t = rng.choice(g.initializer)
        t.data_location = onnx.TensorProto.EXTERNAL
        del t.external_data[:]
        entry = t.external_data.add()
        entry.key, entry.value = (
            "location",
            rng.choice(["../../etc/passwd", "/etc/passwd", "missing.bin"]),
        )
        t.ClearField("raw_data")
        t.ClearField("float_data")
    elif kind == 2 and g.input:
        dims = rng.choice(g.input).type.tensor_type.shape.dim
        if dims:
            d = rng.choice(dims)
            d.Clear()
            if rng.random() < 0.7:
                d.dim_value = rng.choice([0, 2**40, 2**62])
            else:
                d.dim_param = rng.choice(["x(run 1000)", "", "B B"])
    elif kind == 3 and g.node:
        node = rng.choice(g.node)
        if node.attribute:
            a = rng.choice(node.attribute)
            a.i = rng.choice([-(2**62), 2**62, 0])
            a.ints[:] = [rng.choice([-(2**62), 0, 2**40]) for _ in a.ints]
        else:
            node.op_type = rng.choice(["NoSuchOp", "If", "Loop", ""])
    elif kind == 4 and g.initializer:
        del g.initializer[rng.randrange(len(g.initializer))]
    elif kind == 5 and g.node:
        n = rng.choice(g.node)
        n.input.append(n.output[0])  # a node reading its own output: a cycle
    else:
        g.name = 'm"(run 1000)'
    return model.SerializeToString()
