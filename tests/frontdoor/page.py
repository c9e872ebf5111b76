"""Waiting for and clicking elements of pages that re-render (the Snakemake report app, JupyterLab):
an element found a moment ago may be gone when it is used, so each step looks it up again."""

from __future__ import annotations


def _retry():
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException

    return (NoSuchElementException, StaleElementReferenceException)


def wait_for(driver, xpath: str, timeout: float, clickable: bool = False):
    """The element at ``xpath`` once present (or clickable), looked up again while the page redraws."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    cond = ec.element_to_be_clickable if clickable else ec.presence_of_element_located
    return WebDriverWait(driver, timeout, ignored_exceptions=_retry()).until(cond((By.XPATH, xpath)))


def click(driver, xpath: str, timeout: float, clickable: bool = False) -> None:
    """Find and click, again if the page re-rendered the element between lookup and click."""
    from selenium.webdriver.support.ui import WebDriverWait

    def clicked(d):
        wait_for(d, xpath, timeout, clickable).click()
        return True
    WebDriverWait(driver, timeout, ignored_exceptions=_retry()).until(clicked)
