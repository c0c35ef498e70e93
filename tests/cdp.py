"""Chromium's own accessibility tree of a page, over the DevTools protocol on a pipe
(`--remote-debugging-pipe`: JSON messages ending in NUL, read by the browser on fd 3, written
on fd 4). No websocket, no new dependency; each wait ends on the browser's answer, bounded by a
deadline only so that a browser that never answers fails the test instead of hanging it."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

DEADLINE_S = 120.0


class Browser:
    def __init__(self, browser: str, profile: Path, width: int = 1280, height: int = 1000) -> None:
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()

        def onto_3_and_4() -> None:
            # In the child only: the pipe ends at the fds the protocol names.
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)

        self.proc = subprocess.Popen(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            pass_fds=(3, 4),
            preexec_fn=onto_3_and_4,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._id = 0
        # Events that came while a call's answer was awaited, for `event` to find.
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError, EOFError, TimeoutError):
            self.call("Browser.close")
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._write)
        os.close(self._read)

    def _send(self, method: str, params: dict[str, Any] | None, session: str | None) -> int:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        return self._id

    def _next(self, end: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._read], [], [], max(0.0, end - time.monotonic()))
            if not ready:
                raise TimeoutError("the browser did not answer")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise EOFError("the browser closed its pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        wanted = self._send(method, params, session)
        end = time.monotonic() + DEADLINE_S
        while True:
            message = self._next(end)
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self._events.append(message)

    def event(self, method: str) -> dict[str, Any]:
        for i, message in enumerate(self._events):
            if message.get("method") == method:
                return self._events.pop(i)
        end = time.monotonic() + DEADLINE_S
        while True:
            message = self._next(end)
            if message.get("method") == method:
                return message

    def accessibility_tree(self, page: Path) -> list[dict[str, Any]]:
        """The nodes of the tree Chromium builds for `page` once it has loaded, each as
        {role, name, description}, the ignored ones left out."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        self.call("Page.enable", session=session)
        self.call("Page.navigate", {"url": page.as_uri()}, session=session)
        self.event("Page.loadEventFired")
        nodes = self.call("Accessibility.getFullAXTree", session=session)["nodes"]
        return [
            {
                "role": node.get("role", {}).get("value"),
                "name": node.get("name", {}).get("value") or "",
                "description": node.get("description", {}).get("value") or "",
            }
            for node in nodes
            if not node.get("ignored")
        ]
