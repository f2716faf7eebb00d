"""Text models: a tokenizer before an encoder, and pooling after it, inside the server.

A model whose version directory ships a ``tokenizer.json`` (Hugging Face ``tokenizers``)
and whose config takes text (one BYTES input, or two for text pairs, as a cross-encoder
does) is served as one model from text to its outputs: the server tokenizes each text
when the request is queued (so the scheduler knows its length, server/token_batching.py),
the engine (onnxruntime, torch) runs the graph on token ids, and the embedding is pooled
from the graph's token states and normalised on the instance thread. No Python model and
no ensemble hop is involved.

Its config's parameters, each optional (sentence-transformers' own files in the version
directory give the defaults, as Hugging Face's text-embeddings-inference reads them):

=======================  ==================================================================
``tokenizer``            the tokenizer file in the version directory (``tokenizer.json``)
``max_sequence_length``  tokens kept per text (``sentence_bert_config.json``'s
                         ``max_seq_length``, else the tokenizer's truncation, else 512)
``pooling``              ``mean`` | ``cls`` | ``last`` | ``none`` (``1_Pooling/config.json``,
                         else ``mean``); ``none`` answers the graph's outputs as they are
``pooling_output``       the graph output pooled (its first output with a token axis)
``normalize``            ``true`` | ``false``: L2-normalise the pooled vector (``true``
                         unless ``modules.json`` lists no Normalize module)
``token_count_output``   the name of an INT64 [1] output giving each text's token count
=======================  ==================================================================
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from modelyard import error_rules
from modelyard.engines.base import Signature, TensorSpec
from modelyard.errors import ModelServerError, load_error
from modelyard.modelfiles.config import model_parameter, positive_int_parameter

TOKEN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")  # what a tokenizer fills
POOLING_MODES = ("mean", "cls", "last", "none")
DEFAULT_MAX_SEQUENCE_LENGTH = 512
TOKENIZER_FILE_MAX_BYTES = 64 << 20
SETTINGS_FILE_MAX_BYTES = 1 << 20
# a text is read up to this many bytes per token kept: no token of a real text spans more,
# and a caller's megabyte of text costs the tokenizer no more than the tokens it keeps
BYTES_PER_TOKEN_READ = 64
DEFAULT_INPUT = "TEXT"
DEFAULT_OUTPUT = "EMBEDDING"


def _plain_name(name: str) -> bool:
    return bool(name) and "/" not in name and "\\" not in name and not name.startswith(".")


def _read_json(path: Path) -> Any:
    """A small JSON settings file of the model's, or None when absent or unreadable."""
    try:
        if not path.is_file() or path.stat().st_size > SETTINGS_FILE_MAX_BYTES:
            return None
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def is_text_model(version_dir: Path, config: mc.ModelConfig, graph: Signature | None) -> bool:
    """Whether a model is served from text: it names a tokenizer, or it ships a
    ``tokenizer.json`` and its config takes BYTES where its graph takes token ids."""
    if model_parameter(config, "tokenizer") is not None:
        return True
    if graph is None or not (version_dir / "tokenizer.json").is_file():
        return False
    takes_text = bool(config.input) and all(i.data_type == mc.TYPE_STRING for i in config.input)
    return takes_text and any(spec.name == "input_ids" for spec in graph.inputs)


@dataclass(frozen=True, slots=True)
class TextEncoding:
    """What turns a text model's requests into token rows, and token states into answers."""

    tokenizer: Any  # tokenizers.Tokenizer, truncating at max_length, never padding
    text_inputs: tuple[str, ...]  # one input, or two for pairs
    graph_inputs: tuple[tuple[str, np.dtype[Any]], ...]  # the token inputs the graph takes
    max_length: int
    pooling: str
    pooled_from: str  # the graph output pooled ("" with pooling none)
    normalize: bool
    embedding_output: str  # the config's pooled output ("" with pooling none)
    token_count_output: str  # "" when not asked for
    signature: Signature  # the model as its callers see it: text in, its outputs out

    @property
    def engine_outputs(self) -> list[str]:
        """What the engine computes for every batch."""
        if self.pooling == "none":
            return [o.name for o in self.signature.outputs if o.name != self.token_count_output]
        return [self.pooled_from]

    def texts(self, array: np.ndarray, name: str) -> list[str]:
        """A BYTES input's rows as text, each read up to the bytes its tokens may span."""
        limit = self.max_length * BYTES_PER_TOKEN_READ
        texts = []
        for row, item in enumerate(array.reshape(len(array), -1)[:, 0]):
            raw = item if isinstance(item, bytes) else str(item).encode("utf-8")
            if len(raw) > limit:
                raw = raw[:limit]
            try:
                texts.append(raw.decode("utf-8"))
            except UnicodeDecodeError as error:
                if error.start < len(raw) - 3 or len(raw) < limit:
                    raise ModelServerError.of(
                        error_rules.TEXT_INPUT,
                        f"input '{name}' row {row} is not UTF-8 text ({error.reason} at byte "
                        f"{error.start})",
                        where=f"the request's '{name}' values: UTF-8 text",
                    ) from None
                texts.append(raw[: error.start].decode("utf-8"))  # a character cut at the limit
        return texts

    def encode(self, inputs: Mapping[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
        """Each row of a request as the graph's token inputs (1-D, one row's tokens)."""
        first = self.texts(inputs[self.text_inputs[0]], self.text_inputs[0])
        if len(self.text_inputs) == 2:
            second = self.texts(inputs[self.text_inputs[1]], self.text_inputs[1])
            encodings = self.tokenizer.encode_batch_fast(list(zip(first, second, strict=True)))
        else:  # without offsets: 15 % less than encode() for one text
            encodings = self.tokenizer.encode_batch_fast(first)
        rows = []
        for encoding in encodings:
            ids = encoding.ids
            row = {}
            for name, dtype in self.graph_inputs:
                if name == "input_ids":
                    row[name] = np.array(ids, dtype=dtype)
                elif name == "attention_mask":
                    row[name] = np.ones(len(ids), dtype=dtype)
                else:
                    row[name] = np.array(encoding.type_ids, dtype=dtype)
            rows.append(row)
        return rows

    def answer(
        self, results: Mapping[str, np.ndarray], lengths: np.ndarray
    ) -> dict[str, np.ndarray]:
        """A batch's answers from the engine's: pooled and normalised, with token counts."""
        if self.pooling == "none":
            answers = dict(results)
        else:
            states = results[self.pooled_from]
            vectors = pool(states, lengths, self.pooling)
            if self.normalize:
                norms = np.linalg.norm(vectors, axis=1, keepdims=True)
                vectors = vectors / np.maximum(norms, 1e-12)
            answers = {self.embedding_output: vectors.astype(np.float32, copy=False)}
        if self.token_count_output:
            answers[self.token_count_output] = lengths.astype(np.int64).reshape(-1, 1)
        return answers


def pool(states: np.ndarray, lengths: np.ndarray, mode: str) -> np.ndarray:
    """One vector per row from token states [rows, tokens, width]: the mean over each row's
    own tokens, its first token (CLS) or its last real token. Padding never counts."""
    states = np.asarray(states, dtype=np.float32)
    if mode == "cls":
        return states[:, 0, :]
    if mode == "last":
        return states[np.arange(len(states)), np.maximum(lengths, 1) - 1, :]
    mask = (np.arange(states.shape[1]) < lengths[:, None]).astype(np.float32)
    summed = np.matmul(mask[:, None, :], states)[:, 0, :]
    return summed / np.maximum(lengths, 1).astype(np.float32)[:, None]


def _defaults(version_dir: Path) -> tuple[int | None, str | None, bool]:
    """sentence-transformers' settings beside the model: max length, pooling, normalize."""
    bert = _read_json(version_dir / "sentence_bert_config.json")
    max_length = bert.get("max_seq_length") if isinstance(bert, dict) else None
    pooling_doc = _read_json(version_dir / "1_Pooling" / "config.json")
    pooling = None
    if isinstance(pooling_doc, dict):
        for key, mode in (
            ("pooling_mode_mean_tokens", "mean"),
            ("pooling_mode_cls_token", "cls"),
            ("pooling_mode_lasttoken", "last"),
        ):
            if pooling_doc.get(key):
                pooling = mode
                break
    modules = _read_json(version_dir / "modules.json")
    normalize = True  # an embedding is compared by angle: unit length unless told otherwise
    if isinstance(modules, list):
        normalize = any(
            isinstance(m, dict) and str(m.get("type", "")).endswith("Normalize") for m in modules
        )
    return (max_length if isinstance(max_length, int) else None), pooling, normalize


def _token_axis_outputs(graph: Signature) -> list[TensorSpec]:
    return [o for o in graph.outputs if len(o.dims) >= 3 or (len(o.dims) == 2 and o.dims[1] < 0)]


def load_text_encoding(
    model: str, version: int, version_dir: Path, config: mc.ModelConfig, graph: Signature
) -> TextEncoding:
    """Read a text model's tokenizer and settings; refuse what cannot be served, with why."""
    where = _Where(model, version)
    default_length, default_pooling, default_normalize = _defaults(version_dir)
    tokenizer = _tokenizer(where, version_dir, config)
    truncation = tokenizer.truncation or {}
    max_length = positive_int_parameter(
        model,
        version,
        config,
        "max_sequence_length",
        default_length or int(truncation.get("max_length") or DEFAULT_MAX_SEQUENCE_LENGTH),
    )
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length)
    pooling = (model_parameter(config, "pooling") or default_pooling or "mean").lower()
    if pooling not in POOLING_MODES:
        raise where.error(
            f"pooling '{pooling}' is not one of {', '.join(POOLING_MODES)}", "pooling"
        )
    normalize = (model_parameter(config, "normalize") or "").lower()
    text_inputs = _text_inputs(where, config)
    token_count_output = model_parameter(config, "token_count_output") or ""
    if not _plain_name(token_count_output):
        token_count_output = ""
    pooled_from, embedding_output, outputs = _outputs(
        where, config, graph, pooling, token_count_output
    )
    return TextEncoding(
        tokenizer=tokenizer,
        text_inputs=text_inputs,
        graph_inputs=_graph_inputs(where, graph),
        max_length=max_length,
        pooling=pooling,
        pooled_from=pooled_from,
        normalize=normalize in ("true", "1", "yes") if normalize else default_normalize,
        embedding_output=embedding_output,
        token_count_output=token_count_output,
        signature=Signature(
            inputs=[TensorSpec(name, "BYTES", (-1, 1)) for name in text_inputs],
            outputs=outputs,
            batched=True,
        ),
    )


@dataclass(frozen=True, slots=True)
class _Where:
    """The model a setting is refused for, and where its config is."""

    model: str
    version: int

    def error(self, detail: str, change: str) -> ModelServerError:
        return load_error(
            self.model,
            self.version,
            detail,
            f"{change} in {self.model}/config.pbtxt",
            rule="model-server/text-model",
        )


def _tokenizer(where: _Where, version_dir: Path, config: mc.ModelConfig) -> Any:
    from tokenizers import Tokenizer  # the embeddings extra; imported only for text models

    filename = model_parameter(config, "tokenizer") or "tokenizer.json"
    if not _plain_name(filename):
        raise where.error(f"tokenizer '{filename}' is not a file name", "tokenizer")
    path = version_dir / filename
    if not path.is_file() or path.stat().st_size > TOKENIZER_FILE_MAX_BYTES:
        raise where.error(
            f"no tokenizer file {filename} of at most {TOKENIZER_FILE_MAX_BYTES >> 20} MiB in "
            f"version {where.version}",
            f"put {filename} in {where.model}/{where.version}/, or tokenizer",
        )
    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # the library raises its own untyped errors
        raise where.error(f"tokenizers could not read {filename}: {exc}", "tokenizer") from exc


def _graph_inputs(where: _Where, graph: Signature) -> tuple[tuple[str, np.dtype[Any]], ...]:
    """The graph's inputs, each one a tokenizer fills, with its integer type."""
    for spec in graph.inputs:
        if spec.name not in TOKEN_INPUTS:
            raise where.error(
                f"the graph's input '{spec.name}' is not one a tokenizer fills "
                f"({', '.join(TOKEN_INPUTS)})",
                "export the model with those inputs, or remove tokenizer",
            )
    if not any(spec.name == "input_ids" for spec in graph.inputs):
        raise where.error(
            "the graph takes no input_ids", "export the model with input_ids, or remove tokenizer"
        )
    return tuple((spec.name, _integer_dtype(spec.datatype)) for spec in graph.inputs)


def _text_inputs(where: _Where, config: mc.ModelConfig) -> tuple[str, ...]:
    names = tuple(i.name for i in config.input) or (DEFAULT_INPUT,)
    if len(names) > 2 or any(i.data_type != mc.TYPE_STRING for i in config.input):
        raise where.error(
            "a text model takes one BYTES input (a text) or two (a text pair), "
            f"not {', '.join(names)}",
            "the inputs",
        )
    return names


def _outputs(
    where: _Where, config: mc.ModelConfig, graph: Signature, pooling: str, counted_as: str
) -> tuple[str, str, list[TensorSpec]]:
    """The graph output pooled, the config's embedding output, and the model's outputs."""
    counted = [TensorSpec(counted_as, "INT64", (-1, 1))] if counted_as else []
    if pooling == "none":
        return "", "", [*graph.outputs, *counted]
    candidates = _token_axis_outputs(graph)
    pooled_from = model_parameter(config, "pooling_output") or (
        candidates[0].name if candidates else ""
    )
    source = next((o for o in graph.outputs if o.name == pooled_from), None)
    if source is None or len(source.dims) != 3:
        raise where.error(
            f"no graph output of token states [batch, tokens, width] to pool "
            f"(outputs: {', '.join(o.name for o in graph.outputs)})",
            "pooling_output, or pooling: none",
        )
    named = [o.name for o in config.output if o.name != counted_as]
    embedding_output = named[0] if named else DEFAULT_OUTPUT
    return pooled_from, embedding_output, [
        TensorSpec(embedding_output, "FP32", (-1, source.dims[2])),
        *counted,
    ]


def _integer_dtype(datatype: str) -> np.dtype[Any]:
    return np.dtype(np.int32) if datatype == "INT32" else np.dtype(np.int64)
