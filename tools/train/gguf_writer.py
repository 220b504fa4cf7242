"""Minimal GGUF v3 writer and reader (little endian, alignment 32): F32, F16 and Q8_0 tensors.

Tensors are given in PyTorch layout (row-major, [rows, cols]); GGUF lists dimensions in ggml
order, ne[0] = columns (the input dimension), so the bytes are identical and only the shape is
reversed. Q8_0: blocks of 32 values along ne[0], each an f16 scale d = max|x| / 127 followed by
32 int8 q = round(x / d).
"""
import struct

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32

# Metadata value types
T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY, \
    T_UINT64, T_INT64, T_FLOAT64 = range(13)
# Tensor types (ggml_type)
GGML_F32, GGML_F16, GGML_Q8_0 = 0, 1, 8
QK8_0 = 32
TYPE_NAMES = {GGML_F32: "F32", GGML_F16: "F16", GGML_Q8_0: "Q8_0"}

_SCALAR = {T_UINT8: "<B", T_INT8: "<b", T_UINT16: "<H", T_INT16: "<h", T_UINT32: "<I",
           T_INT32: "<i", T_FLOAT32: "<f", T_BOOL: "<?", T_UINT64: "<Q", T_INT64: "<q",
           T_FLOAT64: "<d"}


def _str(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _infer_type(v):
    if isinstance(v, bool):
        return T_BOOL
    if isinstance(v, int):
        return T_UINT32 if 0 <= v < 2**32 else T_INT64
    if isinstance(v, float):
        return T_FLOAT32
    if isinstance(v, str):
        return T_STRING
    raise TypeError(f"cannot infer GGUF type of {v!r}")


def _value(vtype, v):
    if vtype == T_STRING:
        return _str(v)
    return struct.pack(_SCALAR[vtype], v)


def quantize_q8_0(x: np.ndarray) -> bytes:
    """x: float32 [rows, cols] with cols % 32 == 0 -> Q8_0 bytes, row-major blocks."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.shape[-1] % QK8_0:
        raise ValueError(f"Q8_0 needs the row length to be a multiple of 32, got {x.shape}")
    blocks = x.reshape(-1, QK8_0)
    amax = np.abs(blocks).max(axis=1)
    d = amax / 127.0
    inv = np.where(d > 0, 1.0 / np.where(d > 0, d, 1.0), 0.0)
    q = np.round(blocks * inv[:, None]).clip(-127, 127).astype(np.int8)  # round half away from 0
    out = np.empty(len(blocks), dtype=[("d", "<f2"), ("q", "i1", (QK8_0,))])
    out["d"] = d.astype(np.float16)
    out["q"] = q
    return out.tobytes()


def dequantize_q8_0(buf: bytes, n: int) -> np.ndarray:
    arr = np.frombuffer(buf, dtype=[("d", "<f2"), ("q", "i1", (QK8_0,))], count=n // QK8_0)
    return (arr["d"].astype(np.float32)[:, None] * arr["q"].astype(np.float32)).reshape(-1)


def tensor_nbytes(ttype, n):
    if ttype == GGML_F32:
        return 4 * n
    if ttype == GGML_F16:
        return 2 * n
    if ttype == GGML_Q8_0:
        return n // QK8_0 * (2 + QK8_0)
    raise ValueError(ttype)


class GGUFWriter:
    def __init__(self):
        self.kv = []  # (key, vtype, value, array elem type)
        self.tensors = []  # (name, shape (torch order), ggml type, bytes)

    def add(self, key, value, vtype=None):
        if isinstance(value, (list, tuple)):
            et = vtype if vtype is not None else _infer_type(value[0])
            self.kv.append((key, T_ARRAY, list(value), et))
        else:
            self.kv.append((key, vtype if vtype is not None else _infer_type(value), value, None))

    def add_tensor(self, name, array: np.ndarray, ttype):
        a = np.ascontiguousarray(array, dtype=np.float32)
        if ttype == GGML_F32:
            data = a.astype("<f4").tobytes()
        elif ttype == GGML_F16:
            data = a.astype("<f2").tobytes()
        elif ttype == GGML_Q8_0:
            data = quantize_q8_0(a)
        else:
            raise ValueError(ttype)
        self.tensors.append((name, a.shape, ttype, data))

    def write(self, path):
        out = bytearray()
        out += GGUF_MAGIC + struct.pack("<I", GGUF_VERSION)
        out += struct.pack("<QQ", len(self.tensors), len(self.kv))
        for key, vtype, value, et in self.kv:
            out += _str(key) + struct.pack("<I", vtype)
            if vtype == T_ARRAY:
                out += struct.pack("<IQ", et, len(value))
                for v in value:
                    out += _value(et, v)
            else:
                out += _value(vtype, value)
        offset = 0
        for name, shape, ttype, data in self.tensors:
            ne = list(reversed(shape))
            out += _str(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
            out += struct.pack("<IQ", ttype, offset)
            offset += len(data)
            offset += (-offset) % ALIGNMENT
        out += b"\0" * ((-len(out)) % ALIGNMENT)
        for name, shape, ttype, data in self.tensors:
            out += data
            out += b"\0" * ((-len(out)) % ALIGNMENT)
        with open(path, "wb") as f:
            f.write(out)


class GGUFReader:
    """Reads metadata and tensors back (dequantized to float32, PyTorch shape order)."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.buf = f.read()
        self.pos = 0
        if self._take(4) != GGUF_MAGIC:
            raise ValueError(f"{path}: not a GGUF file")
        (self.version,) = self._unpack("<I")
        n_tensors, n_kv = self._unpack("<QQ")
        self.meta = {}
        for _ in range(n_kv):
            key = self._string()
            (vtype,) = self._unpack("<I")
            self.meta[key] = self._read_value(vtype)
        self.infos = []
        for _ in range(n_tensors):
            name = self._string()
            (nd,) = self._unpack("<I")
            ne = [self._unpack("<Q")[0] for _ in range(nd)]
            ttype, off = self._unpack("<IQ")
            self.infos.append((name, ne, ttype, off))
        align = self.meta.get("general.alignment", ALIGNMENT)
        self.data_start = self.pos + (-self.pos) % align

    def _take(self, n):
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def _unpack(self, fmt):
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self._take(size))

    def _string(self):
        (n,) = self._unpack("<Q")
        return self._take(n).decode("utf-8")

    def _read_value(self, vtype):
        if vtype == T_STRING:
            return self._string()
        if vtype == T_ARRAY:
            et, n = self._unpack("<IQ")
            return [self._read_value(et) for _ in range(n)]
        return self._unpack(_SCALAR[vtype])[0]

    def tensor(self, name):
        for tname, ne, ttype, off in self.infos:
            if tname == name:
                n = int(np.prod(ne))
                start = self.data_start + off
                raw = self.buf[start:start + tensor_nbytes(ttype, n)]
                if ttype == GGML_F32:
                    a = np.frombuffer(raw, dtype="<f4").astype(np.float32)
                elif ttype == GGML_F16:
                    a = np.frombuffer(raw, dtype="<f2").astype(np.float32)
                elif ttype == GGML_Q8_0:
                    a = dequantize_q8_0(raw, n)
                else:
                    raise ValueError(f"unsupported tensor type {ttype}")
                return a.reshape(list(reversed(ne)))
        raise KeyError(name)

    def tensor_types(self):
        return {name: TYPE_NAMES.get(t, str(t)) for name, _, t, _ in self.infos}
