"""The schema layer: a document checked against its declared shape, each refusal the
document's error line at the key (file:line), with what was expected and what was there."""

from __future__ import annotations

import pytest

from modelyard.errors import ConfigError
from modelyard.schema import PositiveNumber, Schema, validated
from modelyard.yaml_lines import load_located


class Share(Schema):
    noun = "share"
    reserved_qps: PositiveNumber


class Limit(Schema):
    noun = "limit"
    instance_qps: PositiveNumber | None = None
    burst: int = 1
    models: dict[str, Share] = {}
    tags: list[str] = []


class Declared(Schema):
    noun = "interface"
    models: list[str]


class Document(Schema):
    noun = "top-level"
    name: str = ""
    limits: dict[str, Limit] = {}
    interfaces: list[str] | dict[str, Declared] = []


def refusal(text: str) -> str:
    with pytest.raises(ConfigError) as refused:
        validated(Document, load_located(text, "f.yaml"), load_located(text, "f.yaml").data)
    return refused.value.line()


def test_a_valid_document_is_typed() -> None:
    text = "limits:\n  infer: {instance_qps: 5, models: {ranker: {reserved_qps: 2}}}\n"
    parsed = validated(Document, load_located(text, "f.yaml"), load_located(text, "f.yaml").data)
    assert parsed.limits["infer"].instance_qps == 5.0
    assert parsed.limits["infer"].models["ranker"].reserved_qps == 2.0
    assert parsed.limits["infer"].burst == 1


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            "limits:\n  infer:\n    instance_qps: 5\n    bursts: 2\n",
            "f.yaml:4 at limits.infer.bursts: unknown limit field 'bursts' "
            "(known: burst, instance_qps, models, tags)",
        ),
        ("nmae: x\n", "f.yaml:1 at nmae: unknown top-level field 'nmae' (known: interfaces"),
        (
            "limits:\n  infer:\n    models:\n      ranker: {}\n",
            "f.yaml:4 at limits.infer.models.ranker: the share needs 'reserved_qps'",
        ),
        (
            "limits:\n  infer:\n    instance_qps: -2\n",
            "f.yaml:3 at limits.infer.instance_qps: must be a positive number, got -2",
        ),
        (
            "limits:\n  infer:\n    burst: '3'\n",
            "at limits.infer.burst: expected an integer, got '3'",
        ),
        ("limits:\n  infer:\n    burst: true\n", "expected an integer, got True"),
        (
            "limits:\n  infer:\n    tags: [a, 7]\n",
            "f.yaml:3 at limits.infer.tags.1: expected a string",
        ),
        ("limits: [infer]\n", "f.yaml:1 at limits: expected a mapping, got ['infer']"),
        ("name: [x]\n", "at name: expected a string, got ['x']"),
        # a union: the member with the value's shape says what is wrong
        (
            "interfaces:\n  rank: {models: 5}\n",
            "f.yaml:2 at interfaces.rank.models: expected a list",
        ),
        ("interfaces:\n  rank: {}\n", "f.yaml:2 at interfaces.rank: the interface needs 'models'"),
        (
            "interfaces:\n  rank: {model: [r]}\n",
            "f.yaml:2 at interfaces.rank.model: unknown interface field 'model' (known: models)",
        ),
    ],
)
def test_each_refusal_names_the_key_its_line_and_what_was_wrong(text: str, fragment: str) -> None:
    line = refusal(text)
    assert fragment in line, line
    assert line.startswith("[config] invalid f.yaml:")


def test_a_missing_document_is_an_empty_one() -> None:
    parsed = validated(Document, load_located("", "f.yaml"), None)
    assert parsed.limits == {} and parsed.name == ""
