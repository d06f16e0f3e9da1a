"""A small Chrome DevTools Protocol client over Chromium's --remote-debugging-pipe (standard library only).

It opens one page, records every console message, uncaught exception, log entry (CSP violations land here)
and network request, and can evaluate JavaScript in the page and take a full-page PNG screenshot. Enough to
test a static HTML file in a real browser without Selenium/Playwright (which would add a driver and a second
browser download to the dev dependencies for four commands).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

# Flags for a closed machine: no first-run, sync, component updates or background fetches (they would be
# network requests of the browser's own), no GPU, no sandbox (CI runs as root).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-quic", "--disable-extensions", "--disable-features=Translate,MediaRouter",
         "--hide-scrollbars", "--mute-audio"]


def _above(fd: int, low: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, low)
    os.close(fd)
    return moved


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class PageLog:
    console: list[dict] = field(default_factory=list)  # Runtime.consoleAPICalled params
    exceptions: list[dict] = field(default_factory=list)  # Runtime.exceptionThrown params
    log: list[dict] = field(default_factory=list)  # Log.entryAdded entries
    requests: list[str] = field(default_factory=list)  # every URL the page asked for (blocked ones too)
    blocked: list[str] = field(default_factory=list)  # Network.loadingFailed blockedReason ("csp", ...)

    def errors(self) -> list[str]:
        out = [f"console.{c.get('type')}: {c.get('args')}" for c in self.console if c.get("type") in ("error", "assert")]
        out += [f"exception: {e.get('exceptionDetails', {}).get('text')}" for e in self.exceptions]
        out += [f"log {e.get('source')}/{e.get('level')}: {e.get('text')}" for e in self.log
                if e.get("level") in ("error", "warning")]
        return out


class Browser:
    """`with Browser() as b: log = b.open(path); b.evaluate(js); png = b.screenshot()`."""

    def __init__(self, executable: str | None = None, width: int = 1280, height: int = 900, timeout: float = 60):
        self.executable = executable or find_chromium()
        if self.executable is None:
            raise FileNotFoundError("chromium is not installed")
        self.width, self.height, self.timeout = width, height, timeout
        self._id = 0
        self._buffer = b""
        self.session: str | None = None
        self.log = PageLog()

    def __enter__(self) -> "Browser":
        self.profile = tempfile.mkdtemp(prefix="hloscan-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # Move the child's ends above 4 first, so that wiring one to 3 cannot overwrite the other.
        to_child_r, from_child_w = (_above(fd, 10) for fd in (to_child_r, from_child_w))

        def wire() -> None:  # in the child: the pipe ends become fds 3 (commands) and 4 (replies)
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        self.proc = subprocess.Popen(
            [self.executable, *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={self.profile}",
             f"--window-size={self.width},{self.height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=wire, close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False})
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._send("Browser.close", {}, session=False)
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - closing must not mask the test's own failure
            self.proc.kill()
            self.proc.wait(timeout=10)
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    # ------------------------------------------------------------------ protocol

    def _send(self, method: str, params: dict | None = None, session: bool = True) -> int:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        return self._id

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from chromium")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if ready:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message = json.loads(raw)
        self._record(message)
        return message

    def _record(self, message: dict) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled":
            self.log.console.append(params)
        elif method == "Runtime.exceptionThrown":
            self.log.exceptions.append(params)
        elif method == "Log.entryAdded":
            self.log.log.append(params.get("entry", {}))
        elif method == "Network.requestWillBeSent":
            self.log.requests.append(params.get("request", {}).get("url", ""))
        elif method == "Network.loadingFailed" and params.get("blockedReason"):
            self.log.blocked.append(params["blockedReason"])

    def call(self, method: str, params: dict | None = None) -> dict:
        number = self._send(method, params)
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._read(deadline)
            if message.get("id") == number:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def wait_for(self, event: str) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._read(deadline)
            if message.get("method") == event:
                return message.get("params", {})

    # ------------------------------------------------------------------ page

    def open(self, path: str | Path, settle: float = 0.5) -> PageLog:
        """Load a local file and wait for its load event (and `settle` seconds for late messages)."""
        url = Path(path).resolve().as_uri()
        self.log = PageLog()  # what this page does, not the previous one
        self.call("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired")
        deadline = time.monotonic() + settle
        try:
            while True:
                self._read(deadline)
        except TimeoutError:
            pass
        return self.log

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"].get("text"))
        return result.get("result", {}).get("value")

    def screenshot(self, max_height: int | None = None) -> bytes:
        """A PNG of the page from its top, as tall as the page (or `max_height` CSS pixels)."""
        metrics = self.call("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics.get("contentSize")
        height = int(size["height"]) if max_height is None else min(int(size["height"]), max_height)
        shot = self.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": self.width, "height": height, "scale": 1}})
        return base64.b64decode(shot["data"])
