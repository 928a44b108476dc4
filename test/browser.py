"""Headless Chromium (Debian's package) driven over the Chrome DevTools protocol: open a page,
evaluate JavaScript, take screenshots. ``chromium_or_skip()`` names the reason when there is no
browser. WebGL runs in software (SwiftShader)."""
from __future__ import annotations

import base64
import itertools
import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--window-size=1280,800"]


def chromium_or_skip() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium on this machine (make browser installs Debian's chromium where "
                "apt-get is available)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout: float, what: str):
    """Poll ``predicate`` until it returns a true value (returned), else AssertionError."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class Browser:
    """One headless Chromium with a fresh profile, one page."""

    def __init__(self, url: str) -> None:
        from websockets.sync.client import connect

        self.profile = tempfile.mkdtemp(prefix="mbsim-chromium-")
        port = free_port()
        self.process = subprocess.Popen(
            [chromium_or_skip(), *FLAGS, f"--user-data-dir={self.profile}",
             f"--remote-debugging-port={port}", url],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pages = wait_for(lambda: self._pages(port), 30, "chromium's DevTools endpoint")
        self.socket = connect(pages[0]["webSocketDebuggerUrl"], max_size=None,
                              open_timeout=30)
        self.ids = itertools.count(1)

    @staticmethod
    def _pages(port: int) -> list:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as r:
                return [p for p in json.load(r) if p.get("type") == "page"]
        except OSError:
            return []

    def call(self, method: str, **params) -> dict:
        ident = next(self.ids)
        self.socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            reply = json.loads(self.socket.recv(timeout=60))
            if reply.get("id") == ident:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def evaluate(self, expression: str):
        return self.call("Runtime.evaluate", expression=expression,
                         returnByValue=True)["result"].get("value")

    def screenshot(self, path: Path | None = None) -> bytes:
        data = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        if path is not None:
            Path(path).write_bytes(data)
        return data

    def close(self) -> None:
        self.socket.close()
        self.process.terminate()
        self.process.wait(timeout=30)
        shutil.rmtree(self.profile, ignore_errors=True)
