"""Compressed checkpoints: the SQLite saver stores each checkpoint zstd-compressed.

LangGraph's SQLite saver writes the whole state in every checkpoint, so a thread of 1,000
topics rewrote its ~210 KB registry every turn although most of it had not changed. The state
is very repetitive (the same keys and time stamps in every topic record, the window quoting
the working set): zstd's fastest level takes it to under a tenth in about 0.2 ms (zlib's
fastest took 1.5 ms for a larger result).

The compression rides in LangGraph's own wrapper for transformed checkpoint bytes,
:class:`~langgraph.checkpoint.serde.encrypted.EncryptedSerializer`: the stored type becomes
``msgpack+zstd``, rows written before (plain ``msgpack``) still load as they are, and the
msgpack allowlist LangGraph derives from the graph's schema still reaches the inner serializer.
"""

from __future__ import annotations

import threading

import zstandard
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

CODEC_NAME = "zstd"
LEVEL = 1


class ZstdCodec:
    """A ``CipherProtocol`` that compresses instead of encrypting (no key: nothing is secret).

    zstd's contexts are not safe to share between threads, and the saver is called from the
    graph's worker threads: each thread keeps its own pair.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def _contexts(self) -> tuple[zstandard.ZstdCompressor, zstandard.ZstdDecompressor]:
        contexts: tuple[zstandard.ZstdCompressor, zstandard.ZstdDecompressor] | None
        contexts = getattr(self._local, "contexts", None)
        if contexts is None:
            contexts = (zstandard.ZstdCompressor(level=LEVEL), zstandard.ZstdDecompressor())
            self._local.contexts = contexts
        return contexts

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        """Compress ``plaintext``; the codec's name is stored with the bytes' type."""
        return CODEC_NAME, self._contexts()[0].compress(plaintext)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        """Decompress bytes this codec wrote."""
        if ciphername != CODEC_NAME:
            raise ValueError(f"checkpoint bytes encoded with {ciphername!r}, not {CODEC_NAME!r}")
        return self._contexts()[1].decompress(ciphertext)


def compressed_serializer() -> EncryptedSerializer:
    """LangGraph's default checkpoint serializer, its output zstd-compressed."""
    return EncryptedSerializer(ZstdCodec(), JsonPlusSerializer())
