"""A rule names an error's id, code and setting once; ``of`` makes the error its keywords make."""

import re

from modelyard import error_rules
from modelyard.errors import Code, ConfigError, ModelServerError, Rule

BUDGET = Rule("config/memory-budget", Code.INVALID_ARGUMENT, "--memory-budget (e.g. 512M, 4G)")


def test_an_error_of_a_rule_is_the_error_its_keywords_make() -> None:
    made = ConfigError.of(BUDGET, "memory size 'x' is not a number")
    spelled = ConfigError(
        "memory size 'x' is not a number",
        code=Code.INVALID_ARGUMENT,
        rule="config/memory-budget",
        where="--memory-budget (e.g. 512M, 4G)",
    )
    assert made.line() == spelled.line()
    assert made.line() == (
        "[config] memory size 'x' is not a number; rule=config/memory-budget; "
        "change: --memory-budget (e.g. 512M, 4G)"
    )
    assert made.fields() == spelled.fields()
    assert type(made) is ConfigError


def test_a_raise_site_names_the_place_and_the_wait() -> None:
    error = ModelServerError.of(
        error_rules.QUEUE_FULL,
        "queue of model 'm' version 1 is full",
        where="max_queue_size in m/config.pbtxt",
        retry_after=0.05,
    )
    assert error.code is Code.UNAVAILABLE
    assert error.rule == error_rules.QUEUE_FULL.id == "model-server/queue-full"
    assert error.line().endswith("change: max_queue_size in m/config.pbtxt; retry after 0.05s")


def test_triton_words_lead_the_line() -> None:
    error = ModelServerError.of(
        error_rules.STOPPING, "Server is stopping, scheduler for model has stopped", triton=True
    )
    assert error.line().startswith("Server is stopping, scheduler for model has stopped; rule=")


def test_the_catalog_names_each_rule_once_in_a_layer() -> None:
    rules = {name: value for name, value in vars(error_rules).items() if isinstance(value, Rule)}
    assert len(rules) > 100
    layers = "config|serve|discovery|protocol|client|gateway|governance|model-server|engine"
    layers += "|platform|optimize|tune"
    for name, rule in rules.items():
        assert name.isupper(), name
        assert re.fullmatch(rf"({layers})/[a-z0-9-]+", rule.id), (name, rule.id)
        assert rule.where is None or rule.where.strip(), name
    # two constants that say the same thing would be the repetition the catalog removes
    assert len(set(rules.values())) == len(rules)
