"""The advice and diff html pages open in headless Chromium with no console errors."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from msprof_py.cli import cli

pytestmark = pytest.mark.browser
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def _open(page: Path) -> tuple[list, int]:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = CHROMIUM
    for f in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        opts.add_argument(f)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        driver.get(page.resolve().as_uri())
        n_svg = driver.execute_script("return document.querySelectorAll('svg rect').length")
        return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")], n_svg
    finally:
        driver.quit()


def test_html_pages_open_without_console_errors(runs, tmp_path) -> None:
    pytest.importorskip("selenium")
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip("chromium / chromedriver not installed")
    assert CliRunner().invoke(cli, ["advise", "--output", str(runs["host_work"]), "--format", "html"]).exit_code == 0
    assert CliRunner().invoke(cli, ["diff", str(runs["clean"]), str(runs["aicpu"]), "--output", str(tmp_path),
                                    "--format", "html"]).exit_code == 0
    for page in (runs["host_work"] / "mindstudio_profiler_output" / "advice.html", tmp_path / "diff.html"):
        errors, bars = _open(page)
        assert errors == [], errors
        assert bars >= 3
