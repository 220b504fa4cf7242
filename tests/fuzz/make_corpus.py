#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/.

Seeds are small valid inputs that reach deep into each target; libFuzzer mutates them. Run
from the project root after changing a target's input format: python3 tests/fuzz/make_corpus.py
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZERS = 5  # fuzz_tokenizers.h: gpt-2, starcoder, deepseek-coder, qwen2.5-coder, llama-spm

CODE = [
    "def add(a, b):\n    return a + b\n",
    "#include <stdio.h>\r\nint main(void) {\r\n  printf(\"hi\\n\");\r\n}\r\n",
    "fn main() {\n    let s = \"héllo wörld — ✓ 😀\";\n}\n",
    "    \t  \n\n  x = [1, 2,  3]  # trailing   \n",
    "const f = (x) => x ?? 0;\n// 日本語のコメント\n",
    "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|><|endoftext|></s><s>",
]


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def frame(obj):
    body = json.dumps(obj).encode() if not isinstance(obj, bytes) else obj
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def lsp_session():
    # Byte 0: bit 0 initializes first, bits 1-2 the encoding, bits 3-7 the read size.
    protocol = os.path.join(HERE, "..", "protocol")
    for name in sorted(os.listdir(protocol)):
        if not name.endswith(".transcript"):
            continue
        stream = b""
        for line in open(os.path.join(protocol, name), encoding="utf-8"):
            if line.startswith("send "):
                stream += frame(json.loads(line[5:]))
        if stream and len(stream) < 8192:
            write("lsp_session", name.replace(".transcript", ""), b"\x00" + stream)
    uri = "file:///a.py"
    doc = {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": CODE[2]}}
    typing = [frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": doc})]
    for i, ch in enumerate("x = ü"):
        typing.append(frame({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 2 + i},
            "contentChanges": [{"range": {"start": {"line": 1, "character": 4 + i}, "end": {"line": 1, "character": 4 + i}},
                                "text": ch}]}}))
        typing.append(frame({"jsonrpc": "2.0", "id": 10 + i, "method": "textDocument/inlineCompletion", "params": {
            "textDocument": {"uri": uri}, "position": {"line": 1, "character": 5 + i}, "context": {"triggerKind": 2}}}))
        if i % 2:
            typing.append(frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 10 + i}}))
    typing.append(frame({"jsonrpc": "2.0", "id": 99, "method": "ghostline/documentText", "params": {"textDocument": {"uri": uri}}}))
    typing.append(frame({"jsonrpc": "2.0", "id": 98, "method": "textDocument/completion", "params": {
        "textDocument": {"uri": uri}, "position": {"line": 0, "character": 3}}}))
    for enc in range(3):
        for chunk in (0, 1, 7):
            write("lsp_session", "typing-enc%d-chunk%d" % (enc, chunk), bytes([1 | enc << 1 | chunk << 3]) + b"".join(typing))


def text_document():
    # encoding, text length, text, then edits: start line, char, end line, char, length, text.
    for enc in range(3):
        for i, text in enumerate(CODE[:5]):
            t = text.encode()[:255]
            edits = b""
            for k in range(6):
                ins = ["x", "\r\n", "é", "😀", "", "\n\n"][k].encode()
                edits += bytes([k % 3, k * 3 % 24, k % 3, (k * 3 + k % 2) % 24, len(ins)]) + ins
            write("text_document", "enc%d-%d" % (enc, i), bytes([enc, len(t)]) + t + edits)


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_file(kvs, tensors, version=3):
    """A GGUF file: kvs is a list of (key, type, payload bytes); tensors (name, dims, type, data)."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for key, vtype, payload in kvs:
        out += gguf_string(key) + struct.pack("<I", vtype) + payload
    offset = 0
    for name, dims, ttype, data in tensors:
        out += gguf_string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", ttype, offset)
        offset += (len(data) + 31) // 32 * 32
    out += b"\0" * (-len(out) % 32)
    for _, _, _, data in tensors:
        out += data + b"\0" * (-len(data) % 32)
    return out


def gguf():
    tokens = ["a", "b", "ab", "\u0120", "<|endoftext|>"]
    vocab = [
        ("general.architecture", 8, gguf_string("llama")),
        ("general.alignment", 4, struct.pack("<I", 32)),
        ("tokenizer.ggml.model", 8, gguf_string("gpt2")),
        ("tokenizer.ggml.pre", 8, gguf_string("gpt-2")),
        ("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, len(tokens)) + b"".join(gguf_string(t) for t in tokens)),
        ("tokenizer.ggml.token_type", 9, struct.pack("<IQ", 5, len(tokens)) + struct.pack("<5i", 1, 1, 1, 1, 3)),
        ("tokenizer.ggml.merges", 9, struct.pack("<IQ", 8, 1) + gguf_string("a b")),
        ("tokenizer.ggml.eos_token_id", 4, struct.pack("<I", 4)),
        ("llama.context_length", 4, struct.pack("<I", 128)),
        ("some.float", 6, struct.pack("<f", 0.5)),
        ("some.bool", 7, b"\x01"),
        ("some.i64", 11, struct.pack("<q", -3)),
        ("some.f64s", 9, struct.pack("<IQ", 12, 2) + struct.pack("<2d", 1.0, 2.0)),
    ]
    f32 = struct.pack("<8f", *range(8))
    f16 = struct.pack("<8e", *range(8))
    write("gguf", "vocab-and-tensors", gguf_file(vocab, [("w.f32", [4, 2], 0, f32), ("w.f16", [8], 1, f16)]))
    write("gguf", "v2-empty", gguf_file([], [], version=2))
    spm = [("tokenizer.ggml.model", 8, gguf_string("llama")),
           ("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 4) + b"".join(gguf_string(t) for t in ["<unk>", "<s>", "</s>", "\u2581a"])),
           ("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, 4) + struct.pack("<4f", 0, 0, 0, -1)),
           ("tokenizer.ggml.token_type", 9, struct.pack("<IQ", 5, 4) + struct.pack("<4i", 2, 3, 3, 1))]
    write("gguf", "spm-vocab", gguf_file(spm, []))
    write("gguf", "tensor-only", gguf_file([("general.alignment", 4, struct.pack("<I", 64))], [("t", [2, 2, 2], 0, f32)]))


def tokenizer():
    for t in range(TOKENIZERS):
        for i, text in enumerate(CODE):
            special = 1 if i == len(CODE) - 1 else 0
            write("tokenizer", "tok%d-%d" % (t, i), bytes([t + TOKENIZERS * special]) + text.encode())


def prompt_assembler():
    for t in range(TOKENIZERS):
        for mode in range(3):
            for i, text in enumerate(CODE[:5]):
                write("prompt_assembler", "tok%d-mode%d-%d" % (t, mode, i),
                      bytes([t + TOKENIZERS * mode, 7 + i, 5 + i, 9]) + (text * 3).encode())


if __name__ == "__main__":
    lsp_session()
    text_document()
    gguf()
    tokenizer()
    prompt_assembler()
