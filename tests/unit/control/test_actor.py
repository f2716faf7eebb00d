"""Who an event says acted: the API's principal, MODELYARD_ACTOR, else the login user."""

from __future__ import annotations

import os
import pwd

import pytest

from modelyard.control.apply import ACTOR, actor


def test_without_user_variables_the_actor_is_the_login_user(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("MODELYARD_ACTOR", "LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.delenv(name, raising=False)
    assert actor() == pwd.getpwuid(os.getuid()).pw_name


def test_the_api_principal_and_the_variable_come_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODELYARD_ACTOR", "release-bot")
    assert actor() == "release-bot"
    token = ACTOR.set("alice via the control API (127.0.0.1)")
    try:
        assert actor() == "alice via the control API (127.0.0.1)"
    finally:
        ACTOR.reset(token)
