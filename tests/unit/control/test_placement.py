"""Copies of models across a group with residency: the hot ones everywhere, within budgets."""

from __future__ import annotations

from modelyard.control.placement import (
    RENEW_S,
    ResidentInstance,
    by_group,
    copies,
    copies_to_make,
    hot_models,
    renewals_due,
)

MB = 1 << 20


def instance(name: str, resident: dict[str, int], known: tuple[str, ...] = ()) -> ResidentInstance:
    models = {m: {"resident": True, "bytes": b} for m, b in resident.items()}
    models.update({m: {"resident": False, "bytes": 0} for m in known if m not in resident})
    stats = {
        "instance": {
            "residency": {
                "budget_bytes": 100 * MB,
                "held_bytes": sum(resident.values()),
                "models": models,
            }
        }
    }
    found = ResidentInstance.from_stats(name, "svc", "g", f"{name}:8000", stats)
    assert found is not None
    return found


def test_the_busiest_models_are_hot_while_they_fit_in_half_the_budget() -> None:
    rates = {"a": 50.0, "b": 20.0, "c": 10.0, "d": 0.0}
    sizes = {"a": 20 * MB, "b": 40 * MB, "c": 20 * MB}
    # within 50 MB: a (20), then b (40) does not fit beside it and c (20) does; d is not
    # asked for at all
    assert hot_models(rates, sizes, 100 * MB) == ["a", "c"]
    assert hot_models({"a": 5.0}, {"a": 80 * MB}, 100 * MB) == []  # too big to copy
    assert hot_models({"x": 1.0}, {}, 100 * MB) == ["x"]  # unknown size: counts as nothing


def test_each_instance_that_lacks_a_hot_model_loads_its_busiest_one_a_round() -> None:
    known = ("a", "b", "c")
    group = [
        instance("i1", {"a": 10 * MB, "b": 10 * MB}, known),
        instance("i2", {"a": 10 * MB}, known),
        instance("i3", {}, known),
    ]
    rates = {"a": 30.0, "b": 20.0, "c": 1.0}
    loads = [(i.name, model) for i, model in copies_to_make(group, rates)]
    assert loads == [("i1", "c"), ("i2", "b"), ("i3", "a")]
    assert copies(group) == {"a": ["i1", "i2"], "b": ["i1"]}


def test_a_model_an_instance_does_not_serve_is_never_sent_to_it() -> None:
    group = [instance("i1", {"a": 10 * MB}, ("a",)), instance("i2", {}, ("b",))]
    loads = [(i.name, model) for i, model in copies_to_make(group, {"a": 10.0, "b": 10.0})]
    assert loads == [("i2", "b")]  # i1 does not serve b, nor i2 a


def test_instances_are_grouped_by_service_and_group() -> None:
    grouped = by_group([instance("i1", {}), instance("i2", {})])
    assert list(grouped) == [("svc", "g")] and len(grouped[("svc", "g")]) == 2


def test_an_instance_without_residency_is_not_one() -> None:
    assert ResidentInstance.from_stats("i", "s", "g", "h", {"instance": {}}) is None


def test_a_hot_copy_is_loaded_again_every_renewal_while_it_stays_hot() -> None:
    known = ("a", "b")
    group = [instance("i1", {"a": 10 * MB, "b": 10 * MB}, known), instance("i2", {"a": 10 * MB})]
    rates = {"a": 30.0, "b": 0.0}  # b is not asked for: not hot, never renewed
    placed_at = {("i1", "a"): 100.0}
    due = [(i.name, m) for i, m in renewals_due(group, rates, placed_at, 100.0 + RENEW_S / 2)]
    assert due == [("i2", "a")]  # i1's copy was placed a moment ago; i2's never by the plane
    due = [(i.name, m) for i, m in renewals_due(group, rates, placed_at, 100.0 + RENEW_S)]
    assert due == [("i1", "a"), ("i2", "a")]
