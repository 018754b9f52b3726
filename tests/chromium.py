"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: commands on the
browser's file descriptor 3, answers and events on 4, each a JSON text ended by a NUL byte): open a page at a
window size, evaluate JavaScript in it, take a screenshot. No package beyond the standard library; Debian's
``chromium`` (``apt-get install -y chromium``) is the browser."""
from __future__ import annotations

import base64
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


def executable() -> str | None:
    """The Chromium on PATH (Debian's ``chromium``), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless Chromium; ``page(url, width, height)`` opens a tab. Use as a context manager."""

    def __init__(self, timeout_s: float = 60.0):
        self.timeout_s = timeout_s
        self.profile = tempfile.mkdtemp(prefix="coloc-chromium-")
        commands_read, self._commands = os.pipe()  # we write commands, the browser reads them on its fd 3
        self._answers, answers_write = os.pipe()  # the browser writes on its fd 4, we read
        command = " ".join(shlex.quote(part) for part in [executable(), *FLAGS, f"--user-data-dir={self.profile}",
                                                          "--remote-debugging-pipe", "about:blank"])
        self.process = subprocess.Popen(["bash", "-c", f"exec {command} 3<&{commands_read} 4>&{answers_write}"],
                                        pass_fds=(commands_read, answers_write), stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        os.close(commands_read)
        os.close(answers_write)
        self._buffer, self._next_id = b"", 0

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._commands)
        os.close(self._answers)
        shutil.rmtree(self.profile, ignore_errors=True)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """One DevTools command; its result (RuntimeError with the browser's error)."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            answer = self._read(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"chromium: {method}: {answer['error']}")
                return answer.get("result", {})

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError(f"chromium: no answer within {self.timeout_s} s")
            chunk = os.read(self._answers, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium: the browser closed its pipe (did it start?)")
            self._buffer += chunk
        text, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(text)

    def page(self, url: str, width: float, height: float) -> "Page":
        """A new tab showing ``url`` with a viewport of ``width`` x ``height`` CSS pixels (rounded), once loaded."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        page.send("Emulation.setDeviceMetricsOverride", {"width": round(width), "height": round(height),
                                                         "deviceScaleFactor": 1, "mobile": False})
        page.send("Page.navigate", {"url": url})
        page.wait_for("document.readyState === 'complete'")
        return page


class Page:
    """A tab of :class:`Browser`."""

    def __init__(self, browser: Browser, session: str):
        self.browser, self.session = browser, session

    def send(self, method: str, params: dict | None = None) -> dict:
        return self.browser.send(method, params, self.session)

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (JSON-able)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"chromium: {expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout_s: float = 30.0) -> None:
        """Until the expression is true (TimeoutError naming it otherwise)."""
        deadline = time.monotonic() + timeout_s
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise TimeoutError(f"chromium: {expression!r} not true within {timeout_s} s")
            time.sleep(0.2)

    def screenshot(self, path: Path) -> Path:
        """The viewport as PNG."""
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))
        return path
