"""Compressed infer bodies, as Triton's HTTP front door takes and gives them.

A request may come with ``Content-Encoding: gzip`` or ``deflate`` (a zlib stream,
as the header means in HTTP); it is inflated before decoding, and never past the
body limit: a few kilobytes that inflate to gigabytes are refused once the limit
is reached, not after. A response of at least a kilobyte is compressed, at
zlib's fastest level, when ``Accept-Encoding`` prefers gzip or deflate, chosen by
weight as Triton chooses.
"""

from __future__ import annotations

import zlib

from modelyard import error_rules
from modelyard.errors import ProtocolError, shown

_WBITS = {b"gzip": 31, b"deflate": 15}  # zlib's window bits: gzip header, zlib header
_CHOICES = ("identity", "deflate", "gzip")


def inflate(body: bytes, encoding: bytes, limit: int) -> bytes:
    """The body a ``Content-Encoding`` compressed, at most ``limit`` bytes of it."""
    name = encoding.strip().lower()
    if name in (b"", b"identity"):
        return body
    wbits = _WBITS.get(name)
    if wbits is None:
        raise ProtocolError.of(
            error_rules.CONTENT_ENCODING,
            f"unsupported Content-Encoding {shown(encoding.decode('latin-1'), 40)}",
        )
    inflater = zlib.decompressobj(wbits)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise ProtocolError.of(
            error_rules.ENCODED_BODY, f"the {name.decode()} body does not inflate: {exc}"
        ) from None
    if len(data) > limit or inflater.unconsumed_tail:
        raise ProtocolError.of(
            error_rules.MAX_BODY_SIZE,
            f"the {name.decode()} body inflates past the limit of {limit} bytes",
        )
    if not inflater.eof:
        raise ProtocolError.of(
            error_rules.ENCODED_BODY, f"the {name.decode()} body ends before its stream does"
        )
    return data


def preferred_encoding(accept: bytes) -> str:
    """What ``Accept-Encoding`` prefers of identity, deflate and gzip (Triton's choice)."""
    chosen, weight = "identity", 0.0
    for item in accept.decode("latin-1").split(",")[:32]:
        name, _, quality = item.strip().partition(";q=")
        try:
            value = float(quality) if quality else 1.0
        except ValueError:
            continue
        if name in _CHOICES and value > weight:
            chosen, weight = name, value
    return chosen


MIN_COMPRESSED_BYTES = 1024  # smaller replies go as they are: the saving is not worth it
_LEVEL = 1  # zlib's fastest: the event loop compresses, and every connection waits on it


def compress(body: bytes, encoding: str) -> bytes:
    packer = zlib.compressobj(_LEVEL, zlib.DEFLATED, 31 if encoding == "gzip" else 15)
    return packer.compress(body) + packer.flush()
