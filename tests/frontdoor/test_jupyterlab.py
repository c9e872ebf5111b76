"""JupyterLab as the README opens it: a server on a free local port with a token, one notebook opened
through the page in a headless Chromium, Run All, and its figure in the output."""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.frontdoor.conftest import PAGE_LOAD_S
from tests.frontdoor.project_copy import copy_project

pytestmark = pytest.mark.slow
GROUP, FIG = "sageserve", "fig01_reactive_vs_ideal"  # arithmetic, no data: Run All takes seconds
RUN_ALL_S = 240
SERVER_START_S = 90


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(url: str, token: str, method: str = "GET", timeout: float = 5):
    req = urllib.request.Request(url, method=method, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        body = r.read()
    return json.loads(body) if body else None


@pytest.fixture
def lab(tmp_path):
    """`jupyter lab` on 127.0.0.1 with a token, serving a copy of the project's notebooks; stopped after."""
    if importlib.util.find_spec("jupyterlab") is None:
        pytest.skip("JupyterLab is not installed (pip install -e .[lab])")
    proj = copy_project(tmp_path / "proj", {GROUP: [FIG]})
    port, token = _free_port(), secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}  # the kernel shows figures inline
    env["PYTHONPATH"] = str(proj / "src")  # as the editable install would
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"), ("JUPYTER_RUNTIME_DIR", "run")):
        env[var] = str(tmp_path / "jupyter" / sub)  # no user settings in, none written out
    # start the notebook's own kernel without asking (the dialog's "Always start the preferred kernel")
    tracker = tmp_path / "jupyter" / "settings" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text(json.dumps({"autoStartDefaultKernel": True}))
    log = open(tmp_path / "jupyter-lab.log", "w")
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={proj / 'notebooks'}",
           f"--LabApp.user_settings_dir={tmp_path / 'jupyter' / 'settings'}",
           f"--LabApp.workspaces_dir={tmp_path / 'jupyter' / 'workspaces'}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers and CI run as root
        cmd.append("--allow-root")
    server = subprocess.Popen(cmd, cwd=proj / "notebooks", env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            try:
                _api(f"{base}/api/status", token)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"jupyter lab did not start: {(tmp_path / 'jupyter-lab.log').read_text()[-3000:]}")
                time.sleep(1)
        yield {"base": base, "token": token, "project": proj, "log": tmp_path / "jupyter-lab.log"}
    finally:
        try:
            _api(f"{base}/api/shutdown", token, method="POST")  # shuts its kernels down too
            server.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=15)
        log.close()


def test_kernel_is_this_environment(lab):
    specs = _api(f"{lab['base']}/api/kernelspecs", lab["token"])
    assert "python3" in specs["kernelspecs"]  # the kernel every notebook names
    # "python" in a kernel spec is the server's own interpreter (jupyter_client), i.e. this environment
    assert specs["kernelspecs"]["python3"]["spec"]["argv"][0] in {"python", "python3", sys.executable}


# browser before lab: without Chromium it skips before a server starts
def test_notebook_runs_all_in_the_page(browser, lab):
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.frontdoor.page import click as page_click
    from tests.frontdoor.page import wait_for

    retry = (NoSuchElementException, StaleElementReferenceException)  # JupyterLab redraws while loading

    def wait(xpath, timeout=PAGE_LOAD_S):
        return wait_for(browser, xpath, timeout, clickable=True)

    def click(xpath):
        page_click(browser, xpath, PAGE_LOAD_S, clickable=True)

    def accept_kernel_dialog():
        """On a loaded machine JupyterLab may open the notebook before it has the kernel list and ask
        which kernel to use, offering the notebook's own (python3): accept it. False: no dialog."""
        try:
            for dialog in browser.find_elements(By.XPATH, "//div[contains(@class, 'jp-Dialog-content')]"):
                if "Python 3" in dialog.text:
                    dialog.find_element(By.XPATH, ".//button[contains(@class, 'jp-mod-accept')]").click()
        except (StaleElementReferenceException, NoSuchElementException):
            pass  # it closed meanwhile
        return False

    browser.get(f"{lab['base']}/lab/tree/{GROUP}/{FIG}.ipynb?token={lab['token']}")
    try:
        # the notebook's kernel is up and idle, then Run > Run All Cells
        wait("//div[contains(@class, 'jp-Notebook')]//div[contains(@class, 'jp-Cell')]")
        WebDriverWait(browser, PAGE_LOAD_S, ignored_exceptions=retry).until(lambda d: accept_kernel_dialog() or d.find_elements(
            By.XPATH, "//*[contains(@class, 'jp-Toolbar-kernelStatus') or contains(@class, 'jp-Notebook-ExecutionIndicator')]"
                      "[contains(@data-status, 'idle')]"))
        time.sleep(2)  # a late kernel dialog opens within moments of the kernel going idle
        accept_kernel_dialog()
        click("//div[contains(@class, 'lm-MenuBar-itemLabel') and normalize-space()='Run']")
        click("//div[contains(@class, 'lm-Menu-itemLabel') and normalize-space()='Run All Cells']")
        # the figure: a PNG <img> in a cell's output (queried in the page: outputs re-render while running)
        figure_js = ("const i = [...document.querySelectorAll('.jp-OutputArea-output img')].filter("
                     "i => i.src.startsWith('data:image/png') && i.complete && i.naturalWidth > 100);"
                     "if (i.length) i[0].scrollIntoView(); return i.length;")
        WebDriverWait(browser, RUN_ALL_S, ignored_exceptions=retry).until(lambda d: d.execute_script(figure_js))
        # the last cell writes the figure's files: Run All went top to bottom
        metrics = lab["project"] / "results" / "quick" / GROUP / FIG / "metrics.json"
        deadline = time.monotonic() + RUN_ALL_S
        while not metrics.exists() and time.monotonic() < deadline:
            time.sleep(1)
        assert metrics.exists(), "Run All did not reach the notebook's last cell"
        assert (lab["project"] / "figures" / "quick" / GROUP / f"{FIG}.png").exists()
        errors = browser.find_elements(By.XPATH, "//div[@data-mime-type='application/vnd.jupyter.stderr' and "
                                                 "contains(., 'Traceback')]")
        assert not errors, errors[0].text
    finally:
        browser.save_screenshot(str(browser.shots / "jupyterlab.png"))
