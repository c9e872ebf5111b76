"""The workflow's HTML report (`snakemake quick_report`): built on two notebooks, then opened in a
headless Chromium to check that it renders each figure with its caption and the claims table."""

from __future__ import annotations

import csv
import html
import time

import pytest

from servesim.analysis.claims import ECHO_STATUSES, MEASURED_STATUSES
from servesim.analysis.report_captions import notebook_title
from tests.frontdoor.page import click, wait_for
from tests.frontdoor.project_copy import FEW_NOTEBOOKS

pytestmark = pytest.mark.slow
FIGURES = [(g, f) for g, figs in FEW_NOTEBOOKS.items() for f in figs]


def test_report_target_writes_every_page(report_project):
    res = report_project / "results" / "test"
    assert (res / "report.html").stat().st_size > 0
    for group, fig in FIGURES:
        rst = (res / "report" / "captions" / group / f"{fig}.rst").read_text()
        assert rst.startswith(".. raw:: html")
        assert html.escape(notebook_title(report_project / "notebooks" / group / f"{fig}.ipynb")) in rst
    with open(res / "claims_report.csv", newline="") as fh:
        ids = [r["id"] for r in csv.DictReader(fh)]
    claims = (res / "report" / "claims.html").read_text()
    assert all(f"<td>{i}</td>" in claims for i in ids)
    assert "fig01_reactive_vs_ideal" in (res / "report" / "runtimes.html").read_text()


def _wait(driver, xpath, timeout=60):
    return wait_for(driver, xpath, timeout)


def _click(driver, xpath, timeout=60):
    click(driver, xpath, timeout)


def _open_category(driver, report, name):
    # a fresh document each time: the report app rewrites its URL as views open, so getting the
    # report again from inside it can be a same-document navigation that keeps the old view's DOM
    # (and its stale links) while the app re-renders
    driver.get("about:blank")
    driver.get(report.as_uri())
    _click(driver, f"//a[normalize-space()='{name}']")


def _open_page(driver, report, category, attempts=3):
    """The frame of a category's first page (its eye icon). Under load (the full suite beside it) a
    click can land while the app is still rendering the category and open nothing: the category is
    opened again, up to ``attempts`` times, before the missing frame fails the test."""
    from selenium.common.exceptions import TimeoutException

    for k in range(attempts):
        _open_category(driver, report, category)
        _click(driver, "//tr[td]//a[@iconname='eye']")
        try:
            return _wait(driver, "//iframe", timeout=30)
        except TimeoutException:
            if k == attempts - 1:
                raise


def test_report_renders_figures_captions_and_claims(browser, report_project):
    from selenium.webdriver.common.by import By

    report = report_project / "results" / "test" / "report.html"
    for group, fig in FIGURES:
        title = notebook_title(report_project / "notebooks" / group / f"{fig}.ipynb")
        category = {"sageserve": "SageServe", "aegaeon": "Aegaeon"}[group]
        _open_category(browser, report, category)
        row = f"//tr[td[normalize-space()='{fig}']]"
        _wait(browser, row)
        # the eye icon shows the figure: an <img> holding this figure's PNG
        _click(browser, f"{row}//a[@iconname='eye']")
        img = _wait(browser, f"//img[contains(@src, 'filename={fig}.png')]")
        assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img) > 100
        browser.save_screenshot(str(browser.shots / f"{fig}.png"))
        # the (i) icon shows its caption, generated from the notebook
        _open_category(browser, report, category)
        _click(browser, f"{row}//a[@iconname='information-circle']")
        caption = _wait(browser, "//div[contains(@class, 'servesim-caption')]").text
        assert title in caption and "Parameters of this run" in caption
        browser.save_screenshot(str(browser.shots / f"{fig}_caption.png"))
    # the claims table, in the Claims category (an HTML page the report shows in a frame)
    with open(report_project / "results/test/claims_report.csv", newline="") as fh:
        want = {r["id"]: r["status"] for r in csv.DictReader(fh)}
    n_claims = len(want)
    frame = _open_page(browser, report, "Claims")
    browser.switch_to.frame(frame)
    _wait(browser, "//h2[normalize-space()='Every claim']")
    tables = browser.find_elements(By.TAG_NAME, "table")
    rows = tables[-1].find_elements(By.XPATH, "./tbody/tr")
    assert len(rows) == n_claims
    # every claim's status as the checker wrote it (the two notebooks resolve only stated/arithmetic
    # claims, CONSISTENT ones, so the table must show those, not only PASS / FAIL)
    head = [th.text for th in tables[-1].find_elements(By.XPATH, "./thead//th")]
    got = browser.execute_script("return Array.from(arguments[0].tBodies[0].rows, "
                                 "r => [r.cells[0].innerText, r.cells[arguments[1]].innerText])",
                                 tables[-1], head.index("status"))
    assert dict(got) == want
    assert any(v in (*MEASURED_STATUSES, *ECHO_STATUSES) for v in want.values())
    browser.switch_to.default_content()
    time.sleep(0.5)
    browser.save_screenshot(str(browser.shots / "claims.png"))

