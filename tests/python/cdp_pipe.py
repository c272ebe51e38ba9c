"""Headless Chromium driven through the DevTools protocol over a pipe
(`--remote-debugging-pipe`: JSON messages ending in a NUL byte on file
descriptors 3 and 4), so that tests click, read the DOM and take screenshots
with nothing but the browser (no Selenium, no driver, no websocket module).
The one place the tests find Debian's chromium (CHROMIUM, needs_chromium)."""
import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None,
                                    reason="chromium not installed (apt-get install chromium; "
                                           "scripts/setup.sh does it)")


def dump_dom(url, budget_ms=10000):
    """The DOM after load (scripts run) as text: `chromium --dump-dom`."""
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                        f"--virtual-time-budget={budget_ms}", "--dump-dom", url],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


class Browser:
    def __init__(self, chromium, width=1280, height=900, profile=None):
        to_child_r, self._w = os.pipe()
        self._r, from_child_w = os.pipe()

        def fds():  # the protocol's fixed descriptors in the child (moved up first:
            a = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)  # either may be 3 or 4)
            b = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        # a profile of its own (localStorage, downloads' settings), gone at close();
        # kept across Browser objects of one test when given (a reload later)
        self._profile = tempfile.mkdtemp(prefix="ferry-chromium-") if profile is None else None
        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             f"--user-data-dir={profile or self._profile}",
             "--remote-debugging-pipe", f"--window-size={width},{height}",
             "--allow-file-access-from-files", "about:blank"],
            # close_fds (and pass_fds, which implies it) would close 3 and 4 after
            # preexec_fn made them; every other descriptor of this process is
            # close-on-exec (os.pipe's, Python's own)
            preexec_fn=fds, close_fds=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf, self._id, self.events = b"", 0, []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)

    def _read(self, timeout):
        end = time.time() + timeout
        while b"\0" not in self._buf:
            if time.time() > end or self.proc.poll() is not None:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._r, 1 << 16)
            if not chunk:
                raise EOFError("chromium closed the pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, session=False, timeout=60, **params):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        while True:
            m = self._read(timeout)
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, name, timeout=60):
        end = time.time() + timeout
        while True:
            for i, m in enumerate(self.events):
                if m.get("method") == name:
                    return self.events.pop(i)
            if time.time() > end:
                raise TimeoutError(f"no {name}")
            self.events.append(self._read(end - time.time()))

    def open(self, url):
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        self.wait_event("Page.loadEventFired")

    def js(self, expression):
        r = self.call("Runtime.evaluate", session=True, expression=expression,
                      returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def click(self, selector):
        """A real mouse click (pressed and released) at the element's centre."""
        box = self.js(f"(function(){{var e=document.querySelector({json.dumps(selector)});"
                      "e.scrollIntoView({block:'center'});var r=e.getBoundingClientRect();"
                      "return [r.left+r.width/2, r.top+r.height/2];})()")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", session=True, type=kind, x=box[0], y=box[1],
                      button="left", clickCount=1)

    def allow_downloads(self, folder):
        """Files the page downloads (an <a download> clicked) go into folder."""
        self.call("Browser.setDownloadBehavior", behavior="allow", downloadPath=str(folder),
                  eventsEnabled=True)

    def wait_download(self, path, timeout=30):
        """The bytes of a download, once the browser has finished writing it."""
        end = time.time() + timeout
        while time.time() < end:
            if os.path.exists(path) and not os.path.exists(str(path) + ".crdownload"):
                with open(path, "rb") as f:
                    data = f.read()
                if data:
                    return data
            time.sleep(0.05)
        raise TimeoutError(f"no download {path}")

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", session=True, format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self._w)
        os.close(self._r)
        if self._profile:
            shutil.rmtree(self._profile, ignore_errors=True)
