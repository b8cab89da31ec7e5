"""A real headless Chromium (Debian's `chromium`, installed by .ci/run), driven over the Chrome DevTools
protocol with aiohttp's WebSocket client: load a page, run script in it, click, take screenshots, and
see every network request it makes."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars",
         "--remote-debugging-port=0", "--remote-allow-origins=*")


def chromium_binary() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("chromium is not installed: .ci/run installs Debian's chromium package")
    pytest.skip("chromium is not installed (apt-get install -y chromium)")


def _running_in_group(group: int) -> bool:
    """Is a process of this group still running (a zombie is not: it writes nothing, and in a container
    nobody may ever reap it)?"""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return False


def _stop_group(proc: subprocess.Popen) -> None:
    """Stop chromium and its helpers (renderer, network, GPU processes): they write into the profile
    directory until they are gone, and removing it while one still writes fails with "Directory not empty"."""
    for sig in (signal.SIGTERM, signal.SIGKILL):  # SIGKILL: whatever ignored SIGTERM for 10 s
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        if _group_gone(proc.pid, within=10):  # after SIGKILL at once, but for a process stuck in the kernel
            break
    proc.wait()


def _group_gone(group: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while _running_in_group(group):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


class Browser:
    """One browser process with one page; `async with Browser() as page:`."""

    def __init__(self, width: int = 1400, height: int = 900) -> None:
        self.size = (width, height)
        self.requests: list[str] = []  # every URL the page asked for
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future] = {}
        self._events: dict[str, asyncio.Event] = {}

    async def __aenter__(self) -> "Browser":
        self._profile = tempfile.TemporaryDirectory(prefix="qm-chromium-")
        self._proc = subprocess.Popen(
            [chromium_binary(), *FLAGS, f"--user-data-dir={self._profile.name}",
             f"--window-size={self.size[0]},{self.size[1]}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port = await self._debug_port(Path(self._profile.name) / "DevToolsActivePort")
        self._http = aiohttp.ClientSession()
        async with self._http.get(f"http://127.0.0.1:{port}/json/list") as response:
            targets = await response.json(content_type=None)
        page = next(t for t in targets if t.get("type") == "page")
        self._ws = await self._http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        self._reader = asyncio.create_task(self._read())
        for domain in ("Page", "Runtime", "Network"):
            await self.send(f"{domain}.enable")
        await self.send("Emulation.setDeviceMetricsOverride",
                        {"width": self.size[0], "height": self.size[1], "deviceScaleFactor": 1, "mobile": False})
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._reader.cancel()
        await self._ws.close()
        await self._http.close()
        _stop_group(self._proc)
        self._profile.cleanup()

    async def _debug_port(self, marker: Path) -> int:
        for _ in range(300):
            if marker.exists() and marker.read_text().strip():
                return int(marker.read_text().split()[0])
            if self._proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self._proc.returncode} before it listened")
            await asyncio.sleep(0.1)
        raise TimeoutError("chromium did not open its DevTools port in 30 s")

    async def _read(self) -> None:
        async for message in self._ws:
            data = message.json()
            if "id" in data and data["id"] in self._pending:
                self._pending.pop(data["id"]).set_result(data)
            elif data.get("method") == "Network.requestWillBeSent":
                self.requests.append(data["params"]["request"]["url"])
            elif data.get("method") in self._events:
                self._events[data["method"]].set()

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        call_id = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self._pending[call_id] = future
        await self._ws.send_json({"id": call_id, "method": method, "params": params or {}})
        reply = await asyncio.wait_for(future, 30)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    async def open(self, path: Path) -> None:
        loaded = self._events.setdefault("Page.loadEventFired", asyncio.Event())
        loaded.clear()
        await self.send("Page.navigate", {"url": path.resolve().as_uri()})
        await asyncio.wait_for(loaded.wait(), 30)

    async def js(self, expression: str) -> Any:
        """Evaluate in the page; exceptions in the page fail the test with the page's message."""
        result = await self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                      "awaitPromise": True})
        if "exceptionDetails" in result:
            raise AssertionError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def choose(self, select_id: str, value: str) -> None:
        """Pick an option as a user does: the value changes and a `change` event fires."""
        await self.js(f"(function(s){{s.value={value!r}; s.dispatchEvent(new Event('change'));}})"
                      f"(document.getElementById({select_id!r}))")

    async def type(self, input_id: str, text: str) -> None:
        await self.js(f"document.getElementById({input_id!r}).focus()")
        await self.js(f"document.getElementById({input_id!r}).value=''")
        await self.send("Input.insertText", {"text": text})

    async def click(self, selector: str) -> None:
        """A real mouse click at the element's centre (so CSS and hit testing count)."""
        box = await self.js(f"(function(e){{e.scrollIntoView({{block:'center'}}); var r=e.getBoundingClientRect();"
                            f"return [r.x + r.width/2, r.y + r.height/2];}})(document.querySelector({selector!r}))")
        for kind in ("mousePressed", "mouseReleased"):
            await self.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1],
                                                         "button": "left", "clickCount": 1})

    async def screenshot(self, path: Path, full_page: bool = True) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
            width, height = await self.js("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": width, "height": min(height, 4000), "scale": 1}
        shot = await self.send("Page.captureScreenshot", params)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path
