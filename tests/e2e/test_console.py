"""The console in a real headless browser (Debian's chromium, driven by Selenium).

A control plane runs real instances under load; the page must show them live,
show a rejection once a rate limit fires (with its error line and where to
change the rule), and show a release's state change after a rollback. Each
view's screenshot is saved under ``test-artifacts/console/`` (or
``$MODELYARD_ARTIFACTS``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from modelyard.governance.auth import hash_secret
from tests.support.models import bytes_echo, slow_double
from tests.support.platform import SERVICE, RunningPlatform, double_spec, running_platform

MAIN = f"{SERVICE}/main"
ARTIFACTS = Path(os.environ.get("MODELYARD_ARTIFACTS", "test-artifacts")) / "console"

SPEC = double_spec(quota_cards=4, main_cards=2)

RULES = """
limits:
  infer:
    instance_qps: 4
breakers:
  slow-double: {interface: infer, model: slow_double, kind: slow_call_ratio, threshold: 0.9,
                slow_call_ms: 5000, window_s: 10, min_requests: 5, recovery_s: 5}
"""

DOUBLE = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1.0, 2.0]}]}


def chromium() -> tuple[str, str]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    assert browser and driver, "the console tests need Debian's chromium and chromium-driver"
    return browser, driver


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    binary, driver_path = chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    options.add_argument("--window-size=1400,1000")
    # a profile of its own under the test's directory: left to chromium, one per run stays
    # behind in the system's temporary directory
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    repository = tmp_path / "models"
    slow_double(repository, delay=0.02)
    bytes_echo(repository)
    spec = tmp_path / "platform.yaml"
    spec.write_text(SPEC)
    return spec, tmp_path / "state", repository


def wait_for(driver: WebDriver, css: str, timeout: float = 30.0, text: str | None = None) -> None:
    def found(d: WebDriver) -> bool:
        elements = d.find_elements(By.CSS_SELECTOR, css)
        return bool(elements) and (text is None or any(text in e.text for e in elements))

    until(driver, found, timeout, f"no {css!r} with {text!r}")


def until(driver: WebDriver, met: Callable[[WebDriver], bool], timeout: float, what: str) -> None:
    """Wait for ``met``, or fail saying ``what`` with a screenshot and the page's status."""
    # the console redraws its views on every poll: an element found may be gone by the time
    # it is read, and the next try finds the new one
    waiting = WebDriverWait(
        driver, timeout, poll_frequency=0.2, ignored_exceptions=[StaleElementReferenceException]
    )
    try:
        waiting.until(met)
    except TimeoutException:
        screenshot(driver, "failed")
        status = driver.find_element(By.ID, "status").text
        raise AssertionError(f"{what} in {timeout:g}s (status: {status})") from None


def show(driver: WebDriver, view: str) -> None:
    """Open a view from the navigation, as a person does: its URL follows."""
    driver.find_element(By.CSS_SELECTOR, f'nav button[data-view="{view}"]').click()
    wait_for(driver, f"#view-{view}:not([hidden])")
    assert driver.current_url.endswith(f"#{view}")


def screenshot(driver: WebDriver, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))


def attribute(driver: WebDriver, css: str, name: str) -> str:
    """An attribute of the element, read again if a redraw replaced it meanwhile."""
    for _ in range(20):
        try:
            return str(driver.find_element(By.CSS_SELECTOR, css).get_attribute(name))
        except StaleElementReferenceException:
            continue
    raise AssertionError(f"{css} kept being redrawn")


def click(driver: WebDriver, css: str) -> None:
    """Click the first element ``css`` finds, found again if a redraw replaced it meanwhile."""

    def clicked(d: WebDriver) -> bool:
        d.find_element(By.CSS_SELECTOR, css).click()
        return True

    until(driver, clicked, 10.0, f"{css} could not be clicked")


def wait_for_count(driver: WebDriver, css: str, at_least: int, timeout: float = 30.0) -> None:
    def counted(d: WebDriver) -> bool:
        elements = d.find_elements(By.CSS_SELECTOR, css)
        return bool(elements) and int(elements[0].get_attribute("data-count") or 0) >= at_least

    until(driver, counted, timeout, f"{css} never counted {at_least}")


def send_bad_inputs(platform: RunningPlatform) -> int:
    """Requests whose inputs do not fit slow_double, until two got through the rate limit to
    be refused with 400: how many were."""
    bad = {"inputs": [{**DOUBLE["inputs"][0], "shape": [1, 3], "data": [1.0, 2.0, 3.0]}]}
    refused = 0
    with httpx.Client(timeout=30) as client:
        for _ in range(200):
            answer = client.post(f"{platform.gateway}/v2/models/slow_double/infer", json=bad)
            assert answer.status_code in (400, 429), answer.text
            refused += answer.status_code == 400
            if refused == 2:
                return refused
            threading.Event().wait(0.1)
    raise AssertionError(f"only {refused} of 200 bad requests got past the rate limit")


def load(platform: RunningPlatform, stop: threading.Event) -> None:
    with httpx.Client(timeout=30) as client:
        while not stop.is_set():
            client.post(f"{platform.gateway}/v2/models/slow_double/infer", json=DOUBLE)
            stop.wait(0.02)


def modelyard(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "modelyard.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_console_shows_live_maps_a_fired_rate_limit_and_a_rollback(
    files: tuple[Path, Path, Path], browser: WebDriver, tmp_path: Path
) -> None:
    spec, state, repository = files
    with running_platform(
        spec, state, repository, "--autoscale", "off", expected_instances=2
    ) as platform:
        rules = tmp_path / "rules.yaml"
        rules.write_text(RULES)
        applied = modelyard("rules", "apply", SERVICE, "-f", str(rules), "--registry",
                            platform.registry)  # fmt: skip
        assert applied.returncode == 0, applied.stderr
        stop = threading.Event()
        caller = threading.Thread(target=load, args=(platform, stop))
        caller.start()
        try:
            browser.get(platform.control + "/")
            # the governance map: both live instances with their queue and health
            wait_for(browser, ".instance", text="up")
            wait_for(browser, ".instance", text="dc1-gpu")
            wait_for(browser, ".instance", text="dc1-cpu")
            assert len(browser.find_elements(By.CSS_SELECTOR, ".instance")) == 2
            # the limit fires: its rule, then one rejection with its line and the change
            wait_for(browser, '.rejection-rule[data-rule="ratelimit/instance-qps"]', timeout=40)
            wait_for(browser, '.breaker[data-rule="breaker/slow-double"]', text="closed")
            wait_for(browser, ".rejection", timeout=20)
            click(browser, ".rejection")
            wait_for(browser, "#rejection-line", text="rule=ratelimit/instance-qps")
            wait_for(
                browser, '#rejection-explanation tr[data-row="change"]', text="modelyard rules"
            )
            screenshot(browser, "governance")
            browser.find_element(By.ID, "rejection-close").click()
            # alike rejections are one row with their count; counters say since when
            grouped = '.rejection[data-rule="ratelimit/instance-qps"]'
            wait_for(browser, f"{grouped} .count", text="\N{MULTIPLICATION SIGN}")
            assert len(browser.find_elements(By.CSS_SELECTOR, grouped)) == 1
            assert int(attribute(browser, grouped, "data-count")) > 1
            wait_for(browser, ".counted-since", text="counted since")
            bad_inputs = send_bad_inputs(platform)

            # a rejection's model opens the model's card on the inference map, its own URL
            click(browser, f"{grouped} .model-link")
            wait_for(browser, "#view-inference:not([hidden])")
            assert browser.current_url.endswith("#inference?model=slow_double")
            assert browser.find_element(By.ID, "model-filter").get_attribute("value") == (
                "slow_double"
            )
            model = '.inf-model[data-model="slow_double/1"]'
            wait_for(browser, model, text="engine python")
            assert not browser.find_elements(By.CSS_SELECTOR, '.inf-model[data-model^="bytes"]')
            wait_for(browser, f"{model} .legend", text="ms / p99")
            wait_for(browser, f"{model} polyline", timeout=20)
            wait_for(browser, f"{model} .axis-time", text=":")  # a time axis: wall times
            # the card shows its rejections and its bad inputs, and links back
            times = "ratelimit/instance-qps \N{MULTIPLICATION SIGN}"
            wait_for(browser, f"{model} .rejection-link", text=times)
            wait_for_count(browser, f"{model} .bad-requests", bad_inputs)
            screenshot(browser, "inference")
            click(browser, f"{model} .rejection-link")
            wait_for(browser, "#view-governance:not([hidden])")
            assert browser.current_url.endswith("#governance?model=slow_double")
            wait_for(browser, grouped)
        finally:
            stop.set()
            caller.join()

        # the ledger: a canary, then a rollback, and the release state follows
        slow_double(repository, delay=0.02, versions=(2,))
        started = platform.post(
            f"/api/v1/groups/{MAIN}/release/start",
            {"model": "slow_double", "version": "2", "percent": 50},
        )
        assert started.status_code == 200, started.text
        browser.get(platform.control + "/#ledger")  # each view has its URL
        wait_for(browser, "#view-ledger:not([hidden])")
        wait_for(browser, 'nav button.active[data-view="ledger"]')
        group = f'.ledger-group[data-group="{MAIN}"]'
        wait_for(browser, f"{group} .release-state", text="canary")
        wait_for(browser, "#quota-table .quota-row", text="A30-24G")
        # each quota's owner, cores and memory used of hard; each group's card share by its use
        owner = '#quota-owners .quota-owner[data-quota="q"]'
        wait_for(browser, owner, text="org test")
        wait_for(browser, f"{owner} .quota-cpu", text="of 64")
        wait_for(browser, f"{owner} .quota-memory", text="of 64")
        wait_for(browser, f'#group-cards .group-cards[data-group="{MAIN}"] .card-share', text="2")
        # what losing dc1, the spec's one data centre, does: the groups are lost
        wait_for(browser, f'#dr-table .dr-row[data-lose="dc1"][data-group="{MAIN}"]', text="lost")
        screenshot(browser, "ledger-canary")
        promoted = platform.post(f"/api/v1/groups/{MAIN}/release/promote", {})
        assert promoted.status_code == 200, promoted.text
        rolled = platform.post(f"/api/v1/groups/{MAIN}/release/rollback", {"revision": 1})
        assert rolled.status_code == 200, rolled.text
        wait_for(browser, f"{group} .release-state", text="stable")
        wait_for(browser, f'{group} .event[data-action="rollback to revision 1"]')
        last = platform.get(f"/api/v1/groups/{MAIN}/events")["events"][-1]
        assert last["actor"].startswith("anonymous via the control API")
        screenshot(browser, "ledger")
        # a promoted canary's name is a stable one's: the role is in the state, not the name
        assert all("canary" not in i["name"] for i in platform.instances(MAIN))
        # the model filter keeps the groups that serve a matching model
        browser.get(platform.control + "/#ledger?model=bytes_echo")
        light = f"{SERVICE}/light"

        def groups_in(d: WebDriver, css: str) -> list[str | None]:
            return [e.get_attribute("data-group") for e in d.find_elements(By.CSS_SELECTOR, css)]

        def filtered(d: WebDriver) -> bool:
            cards, rows = groups_in(d, ".ledger-group"), groups_in(d, "#group-cards .group-cards")
            return cards == [light] and rows == [light]

        until(browser, filtered, 30, "the ledger never kept only the group serving bytes_echo")
        screenshot(browser, "ledger-filtered")
        browser.get(platform.control + "/#ledger")  # the filter cleared
        until(browser, lambda d: len(groups_in(d, ".ledger-group")) == 2, 30, "no filter")
        show(browser, "governance")


def test_console_asks_for_a_key_when_auth_is_on(
    files: tuple[Path, Path, Path], browser: WebDriver, tmp_path: Path
) -> None:
    spec, state, repository = files
    auth = tmp_path / "control.yaml"
    auth.write_text(
        "service: modelyard.control\n"
        "auth:\n"
        "  enabled: true\n"
        "  principals:\n"
        f"    operator: {{api_keys: ['{hash_secret('op-key')}'], allow: {{metadata: ['*']}}}}\n"
    )
    with running_platform(
        spec,
        state,
        repository,
        "--autoscale",
        "off",
        "--auth-file",
        str(auth),
        api_key="op-key",
        expected_instances=2,
    ) as platform:
        anonymous = httpx.get(f"{platform.control}/api/v1/overview")
        assert anonymous.status_code == 401 and "rule=auth/unauthenticated" in anonymous.text
        # metadata may read, but releases are admin
        refused = platform.post(f"/api/v1/groups/{MAIN}/release/abort", {})
        assert refused.status_code == 403 and "may not call interface admin" in refused.text

        browser.get(platform.control + "/")
        wait_for(browser, "#auth-form:not([hidden])")
        assert browser.find_elements(By.CSS_SELECTOR, ".instance") == []
        browser.find_element(By.ID, "api-key").send_keys("wrong")
        browser.find_element(By.CSS_SELECTOR, "#auth-form button").click()
        wait_for(browser, "#auth-error", text="unknown API key")
        field = browser.find_element(By.ID, "api-key")
        field.clear()
        field.send_keys("op-key")
        browser.find_element(By.CSS_SELECTOR, "#auth-form button").click()
        wait_for(browser, ".instance", text="up")
        assert browser.find_element(By.ID, "auth-form").get_attribute("hidden") is not None
        screenshot(browser, "auth")
