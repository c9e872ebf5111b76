"""A headless Chromium for the browser tests (skipped, saying why, where none is installed), and the
HTML report of a few notebooks built once per session."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import pythonpath_env
from tests.frontdoor.project_copy import copy_project

PAGE_LOAD_S = 120  # bounded waits: a loaded 2-core machine opens JupyterLab in well under this


def _chromium() -> tuple[str, str] | None:
    browser = next((b for b in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if b), None)
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@pytest.fixture
def browser(tmp_path):
    """A headless Chromium driven by selenium; its screenshots go to ``browser.shots`` (a pytest tmp dir)."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e .[test])")
    found = _chromium()
    if found is None:
        why = "no Chromium with chromedriver on PATH (Debian: apt-get install chromium chromium-driver)"
        if os.environ.get("SERVESIM_REQUIRE_BROWSER") == "1":  # CI installed one: a missing browser is a failure
            pytest.fail(f"{why}, but SERVESIM_REQUIRE_BROWSER=1")
        pytest.skip(why)
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = found[0]
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000",
              f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service(found[1]), options=opts)
    driver.set_page_load_timeout(PAGE_LOAD_S)
    driver.shots = tmp_path / "screenshots"
    driver.shots.mkdir()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="session")
def report_project(tmp_path_factory):
    """A copy of the project with two notebooks, after `snakemake test_report` (the declared test scale)."""
    proj = copy_project(tmp_path_factory.mktemp("report") / "proj")
    env = pythonpath_env()
    env["PYTHONPATH"] = str(proj / "src")
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", "--config", "allow_download=false",
           "--", "test_report"]
    r = subprocess.run(cmd, cwd=proj, capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, (r.stdout + r.stderr)[-5000:]
    return proj
