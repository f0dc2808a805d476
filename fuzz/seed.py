#!/usr/bin/env python3
"""fuzz/seed.py — writes the seed corpora of the fuzz targets from the bundled recordings into
fuzz/corpus/TARGET/ (generated, not committed). Each seed is one file; the first byte of a
framing or envelope seed is the target's knob (see each target's docs)."""

import hashlib
import json
import pathlib

root = pathlib.Path(__file__).resolve().parent
recordings = sorted((root.parent / "conformance" / "recordings").glob("*.jsonl"))
corpus = root / "corpus"


def put(target: str, data: bytes) -> None:
    d = corpus / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


for path in recordings:
    text = path.read_text()
    put("recording", text.encode())
    lines = text.splitlines()
    header = json.loads(lines[0])
    era = 4 if header.get("protocol_version") == "2026-07-28" else 3
    messages = []
    for line in lines[1:]:
        entry = json.loads(line)
        if "msg" not in entry:
            continue
        # Re-encoded compactly: seeds need the shapes, not the peers' exact bytes.
        msg = json.dumps(entry["msg"], separators=(",", ":")).encode()
        messages.append(msg)
        put("envelope", bytes([era]) + msg)
        put("envelope", bytes([1]) + msg)  # a 2025-03-26 session: batches allowed
        put("typed_decode", msg)
        body = entry["msg"]
        if isinstance(body, dict):
            for key in ("params", "result"):
                if key in body:
                    put("method_table", json.dumps(body[key], separators=(",", ":")).encode())
    stream = b"\n".join(messages) + b"\n"
    put("line_framing", bytes([0x3F]) + stream)
    put("line_framing", bytes([0xC7]) + stream.replace(b"\n", b"\r\n"))
    events = b"".join(b"id: %d\ndata: %s\n\n" % (i, m) for i, m in enumerate(messages))
    put("sse_framing", bytes([0xFF]) + b"retry: 1000\n" + events)
    put("sse_framing", bytes([0x41]) + b": comment\n" + events.replace(b"\n", b"\r\n"))
