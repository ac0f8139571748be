"""--html PATH: the self-contained HTML report, read back as HTML and rendered
in headless Chromium (Debian's chromium package)."""
import base64
import fcntl
import html
import json
import os
import queue
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from cli_paths import CLI_TEST_OPS, USER_FUNCTIONS, WRONG_OPS

import adcheck.refengine as E
import adcheck.runner.checks
import adcheck.runner.runloop
import adcheck.runner.selection
from adcheck import runner
from adcheck.cli.formats.html import page, write_report
from adcheck.gradcheck.core.options import Options
from adcheck.refengine.autograd import Function
from adcheck.runner.checks import run_check
from adcheck.runner.results import CheckResult, RunReport

REPO = Path(__file__).resolve().parents[2]
SCREENSHOT = REPO / "test-output" / "html_report.png"
CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
SETTINGS = {"engine": "refengine", "precise": True, "checks": ["reverse"], "seed": 0}


class Page(HTMLParser):
    """What the tests read from a report: its heatmaps (with their cells),
    its cards, every link, every tag and the text."""

    def __init__(self, text: str):
        super().__init__()
        self.heatmaps, self.cards, self.links, self.tags, self.text = [], [], [], [], []
        self._cell = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        self.tags.append(tag)
        self.links += [v for k, v in attrs if k in ("href", "src", "xlink:href", "action")]
        if tag == "section":
            self.cards.append({"id": a.get("id"), "heatmaps": []})
        elif tag == "svg" and "heatmap" in classes:
            self.heatmaps.append({"label": a.get("aria-label"), "cells": []})
            if self.cards:
                self.cards[-1]["heatmaps"].append(self.heatmaps[-1])
        elif tag == "rect" and "cell" in classes:
            self._cell = {"index": a["data-index"], "classes": classes, "title": ""}
            self.heatmaps[-1]["cells"].append(self._cell)

    def handle_endtag(self, tag):
        if tag == "rect":
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell["title"] += data
        self.text.append(data)


def marked(heatmap, kind="differs") -> set:
    """The data-index of the cells of a heatmap with the class ``kind``."""
    return {cell["index"] for cell in heatmap["cells"] if kind in cell["classes"]}


A = np.arange(12.0).reshape(3, 4) / 7
A_WRONG_AT_2_1 = A.copy()
A_WRONG_AT_2_1[2, 1] += 0.5


class WrongAt21(Function):
    """y = A x, whose vjp uses A with entry [2, 1] off by 0.5."""

    @staticmethod
    def forward(ctx, x):
        return E.matmul(E.tensor(A), x)

    @staticmethod
    def backward(ctx, grad):
        return E.matmul(grad, E.tensor(A_WRONG_AT_2_1))


def _one_wrong_entry_report() -> RunReport:
    """A real check of WrongAt21, kept as the sweep keeps it."""
    x = E.randn(4, dtype=E.float64, requires_grad=True)
    base = CheckResult("one_wrong", "float64", 0, "setup", "error", family="test")
    result, report = run_check(WrongAt21.apply, (x,), "reverse",
                               Options(precise=True, seed=7, name="one_wrong"), base)
    runner.checks.keep_evidence(result, report)
    return RunReport("ops", SETTINGS, [result])


def _synthetic(expected, actual, where, tolerance=1e-6, op="synthetic") -> RunReport:
    failure = {"check": "reverse", "mode": "reverse", "against": "numerical", "out_idx": 0,
               "in_idx": 0, "max_error": 1.0, "where": list(where), "tolerance": tolerance,
               "diagnosis": None, "detail": None}
    dtype = "complex128" if np.iscomplexobj(expected) else "float64"
    result = CheckResult(op, dtype, 0, "reverse", "failed", "it differs", family="t",
                         failures=[failure], jacobians=[(expected, actual)])
    return RunReport("ops", SETTINGS, [result])


def test_the_outlined_cell_is_the_one_wrong_entry_of_a_real_check():
    doc = Page(page(_one_wrong_entry_report()))
    labels = [h["label"] for h in doc.heatmaps]
    assert labels == ["numerical (expected)", "reverse (analytical)",
                      "reverse − numerical (difference)"]
    for heatmap in doc.heatmaps:
        assert len(heatmap["cells"]) == 3 * 4
        assert marked(heatmap) == marked(heatmap, "worst") == {"2,1"}
    cell = next(c for c in doc.heatmaps[1]["cells"] if c["index"] == "2,1")
    assert "[2, 1]" in cell["title"] and "differs beyond the tolerance" in cell["title"]
    assert f"{A_WRONG_AT_2_1[2, 1]:.6g}" in cell["title"]     # the analytical value
    assert "only 1 of 11 nonzero entries differ" in "".join(doc.text)   # the diagnosis


def test_the_page_loads_nothing_and_escapes_what_the_run_says():
    report = _one_wrong_entry_report()
    report.results[0].op = "<script>alert(1)</script>"
    report.results[0].sample_name = 'x" onmouseover="alert(2)'
    text = page(report)
    doc = Page(text)
    assert "script" not in doc.tags and "img" not in doc.tags and "link" not in doc.tags
    assert "http://" not in text and "https://" not in text
    assert all(link.startswith("#") for link in doc.links), doc.links
    assert "<script>alert(1)</script>" in "".join(doc.text)     # shown as text
    assert 'onmouseover="' not in text


def test_a_complex_block_is_drawn_as_its_real_and_imaginary_parts():
    expected = np.array([[1 + 2j, 0], [0, 3 - 1j]])
    actual = expected.copy()
    actual[1, 1] = 3 + 1j                                    # a missing conj()
    doc = Page(page(_synthetic(expected, actual, (1, 1))))
    assert [h["label"].split(", ")[-1].rstrip(")") for h in doc.heatmaps] == \
        ["real part"] * 3 + ["imaginary part"] * 3
    assert all(marked(h) == {"1,1"} for h in doc.heatmaps)
    cell = next(c for c in doc.heatmaps[0]["cells"] if c["index"] == "1,1")
    assert "3-1j" in cell["title"] and "3+1j" in cell["title"]


def test_a_large_block_is_cut_to_a_window_around_the_worst_entry():
    expected = np.zeros((100, 120))
    actual = expected.copy()
    actual[70, 90] = 1.0
    actual[0, 0] = 0.5                                        # differs, outside the window
    text = page(_synthetic(expected, actual, (70, 90)))
    doc = Page(text)
    for heatmap in doc.heatmaps:
        assert len(heatmap["cells"]) == 32 * 32
        assert marked(heatmap) == marked(heatmap, "worst") == {"70,90"}
    assert "of the 100 × 120 block" in text and "1 differing entry lies outside it" in text


def test_a_failed_write_keeps_the_earlier_file(tmp_path, monkeypatch):
    from adcheck.cli.errors import InputError
    path = tmp_path / "report.html"
    path.write_text("earlier report")

    def no_room(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", no_room)
    with pytest.raises(InputError, match="cannot write"):
        write_report(str(path), _one_wrong_entry_report())
    assert path.read_text() == "earlier report"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]   # no partial file left


def test_op_html_marks_the_wrong_diagonal_of_each_sample(run, tmp_path):
    path = tmp_path / "op.html"
    result = run("op", "cli_doubled_sin", "--plugin", WRONG_OPS, "--check", "reverse",
                 "--format", "json", "--html", path)
    assert result.exit_code == 1
    where = [r["report"]["failures"][0]["where"] for r in json.loads(result.stdout)["results"]]
    doc = Page(path.read_text())
    assert len(doc.cards) == 2                                # samples (3,) and (2, 2)
    for card, size, worst in zip(doc.cards, (3, 4), where):
        assert len(card["heatmaps"]) == 3
        for heatmap in card["heatmaps"]:
            assert marked(heatmap) == {f"{i},{i}" for i in range(size)}  # 2 sin' = 2 cos
            assert marked(heatmap, "worst") == {f"{worst[0]},{worst[1]}"}
    text = "".join(doc.text)
    assert "analytical is 2 times numerical" in text
    # the reproducer loads the plugin the op comes from, and reproduces the failure
    code = re.findall(r"<pre><code>(.*?)</code></pre>", path.read_text(), re.S)[0]
    code = html.unescape(code)
    assert "runner.rebuild(" in code and "'cli_doubled_sin', 'float64', 0, 'reverse'" in code
    assert f"plugins=[{WRONG_OPS!r}]" in code
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, timeout=120)
    assert "analytical is 2 times numerical" in ran.stdout, ran.stderr


def test_check_html_draws_a_user_function_and_what_reproduces_it(run, tmp_path):
    path = tmp_path / "check.html"
    result = run("check", f"{USER_FUNCTIONS}:DoubledSin", "--inputs", "randn(3)",
                 "--check", "reverse", "--seed", "3", "--html", path)
    assert result.exit_code == 1
    doc = Page(path.read_text())
    (card,) = doc.cards
    assert all(marked(h) == {"0,0", "1,1", "2,2"} for h in card["heatmaps"])
    line = next(line for line in "".join(doc.text).splitlines() if "--inputs" in line)
    command = line[line.index("adcheck check "):]
    assert "--seed 3" in command and "--inputs 'randn(3)'" in command
    # the command, run again, fails the same way
    again = run(*shlex.split(command)[1:], "-q")
    assert again.exit_code == 1 and "analytical is 2 times numerical" in again.stdout
    # and so does the Python above it, on the same numbers
    code = html.unescape(re.findall(r"<pre><code>(.*?)</code></pre>", path.read_text(),
                                    re.S)[0])
    assert "runner.rebuild_target(" in code and "seed=3" in code
    namespace = {}
    exec(code.replace("print(report.message())", ""), namespace)  # noqa: S102 - the subject
    assert namespace["report"].message().splitlines()[0] in "".join(doc.text)


def test_ops_html_from_worker_processes_draws_only_the_failures(run, tmp_path):
    path = tmp_path / "ops.html"
    result = run("ops", *CLI_TEST_OPS, "--check", "reverse", "--jobs", "2",
                 "--format", "json", "--html", path)
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert all("jacobians" not in r and "check_kwargs" not in r for r in doc["results"])
    text = path.read_text()
    page_ = Page(text)
    assert [c["id"] for c in page_.cards] == ["failure-0", "failure-1"]
    assert len(page_.heatmaps) == 6                           # 2 failed checks x 3 maps
    assert "cli_square" in text and "cli_doubled_sin float64[0] reverse" in text


@pytest.mark.parametrize("command", [["ops", "sin"], ["op", "sin"]])
def test_an_unwritable_html_path_exits_2_before_any_work(run, command, monkeypatch):
    monkeypatch.setattr(runner.selection, "plan", lambda *a, **k: pytest.fail("work started"))
    monkeypatch.setattr(runner.checks, "check_sample", lambda *a: pytest.fail("work started"))
    result = run(*command, "--html", "/no/such/dir/report.html")
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: cannot write")
    assert result.stdout == ""


def test_ctrl_c_in_ops_writes_a_partial_html_report(run, monkeypatch, tmp_path):
    real, calls = runner.runloop.RunLoop.dispatch, []

    def interrupted_on_second_task(self, worker, task):
        calls.append(task)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, worker, task)
    monkeypatch.setattr(runner.runloop.RunLoop, "dispatch", interrupted_on_second_task)
    path = tmp_path / "partial.html"
    result = run("ops", *CLI_TEST_OPS, "--check", "reverse", "--jobs", "1", "--html", path)
    assert result.exit_code == 130
    text = path.read_text()
    assert "Interrupted" in text and "partial" in text
    assert "cli_doubled_sin" in text and "cli_square" not in text
    assert len(Page(text).heatmaps) == 6


def test_ctrl_c_in_op_writes_the_checks_done_so_far(run, monkeypatch, tmp_path):
    real, calls = runner.runloop.RunLoop.receive, []

    def interrupted_on_second_sample(self, worker, message):
        if message[0] == "sample":
            calls.append(message)
            if len(calls) == 2:
                raise KeyboardInterrupt
        return real(self, worker, message)
    monkeypatch.setattr(runner.runloop.RunLoop, "receive", interrupted_on_second_sample)
    path = tmp_path / "partial.html"
    result = run("op", "cli_doubled_sin", "--plugin", WRONG_OPS, "--check", "reverse",
                 "--html", path)
    assert result.exit_code == 130
    doc = Page(path.read_text())
    assert "Interrupted" in "".join(doc.text)
    assert len(doc.cards) == 1 and len(doc.heatmaps) == 3     # sample 0 only


class Chromium:
    """Headless Chromium driven over the DevTools protocol on a pipe: Chromium
    reads commands on fd 3 and writes replies and events on fd 4, each a JSON
    object ended by a NUL byte. Keeps every event, so console messages,
    exceptions and network requests can be read after a page has loaded."""

    FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--window-size=1400,1000",
             "--remote-debugging-pipe")

    def __init__(self, folder: Path):
        to_chrome, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome = os.pipe()
        # high numbers, so that bash puts them on 3 and 4 without clobbering one
        fds = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_chrome, from_chrome)]
        command = ["bash", "-c", f'exec "$0" "$@" 3<&{fds[0]} 4>&{fds[1]}', CHROMIUM,
                   *self.FLAGS, f"--user-data-dir={folder / 'profile'}"]
        self.log = folder / "chromium.log"
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(command, pass_fds=fds, stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=log)
        for fd in (*fds, to_chrome, from_chrome):
            os.close(fd)
        self.events, self._messages, self._id, self.session = [], queue.Queue(), 0, None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buffer = b""
        while chunk := os.read(self._from_chrome, 1 << 16):   # b"" once Chromium exits
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for message in messages:
                self._messages.put(json.loads(message))
        os.close(self._from_chrome)

    def _until(self, match, timeout=60.0):
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self._messages.get(timeout=1.0)
            except queue.Empty:
                assert self.process.poll() is None, f"chromium exited; see {self.log}"
                assert time.monotonic() < deadline, f"no reply from chromium; see {self.log}"
                continue
            if "method" in message:
                self.events.append(message)
            if match(message):
                return message

    def call(self, method: str, **params):
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if self.session is not None and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        reply = self._until(lambda m, n=self._id: m.get("id") == n)
        assert "error" not in reply, (method, reply["error"])
        return reply.get("result", {})

    def open(self, url: str) -> None:
        """Load ``url`` in a new tab and wait for its load event and what precedes it."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.call("Page.navigate", url=url)
        self._until(lambda m: m.get("method") == "Page.loadEventFired")
        self.evaluate("0")          # every event sent before this reply has been read

    def evaluate(self, expression: str):
        reply = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return reply["result"].get("value")

    def console_errors(self) -> list:
        """Console errors and assertions, uncaught exceptions, and error log
        entries (a blocked load, a CSP violation), one line each."""
        found = []
        for event in self.events:
            method, p = event["method"], event.get("params", {})
            if method == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
                args = " ".join(str(a.get("value", a.get("description"))) for a in p["args"])
                found.append(f"console.{p['type']}: {args}")
            elif method == "Runtime.exceptionThrown":
                details = p["exceptionDetails"]
                found.append("exception: " + details.get("exception", {}).get(
                    "description", details.get("text", "")))
            elif method == "Log.entryAdded" and p["entry"]["level"] == "error":
                found.append(f"log ({p['entry']['source']}): {p['entry']['text']}")
        return found

    def requests(self) -> list:
        return [e["params"]["request"]["url"] for e in self.events
                if e["method"] == "Network.requestWillBeSent"]

    def screenshot(self, path: Path, width: int = 1400) -> None:
        """The whole page, ``width`` CSS pixels wide, as a PNG."""
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=1000,
                  deviceScaleFactor=1, mobile=False)
        height = self.call("Page.getLayoutMetrics")["cssContentSize"]["height"]
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=int(height) + 1,
                  deviceScaleFactor=1, mobile=False)
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.session = None
            self.call("Browser.close")
            self.process.wait(timeout=20)
        except Exception:  # noqa: BLE001 - a browser that will not close is killed
            self.process.kill()
            self.process.wait()
        os.close(self._to_chrome)


@pytest.fixture
def chromium(tmp_path):
    browser = Chromium(tmp_path)
    yield browser
    browser.close()


@needs_chromium
def test_the_report_of_a_failing_op_shows_its_heatmaps_in_chromium(run, tmp_path, chromium):
    path = tmp_path / "report.html"
    result = run("op", "cli_doubled_sin", "--plugin", WRONG_OPS, "--check", "reverse",
                 "--sample", "1", "--html", path)
    assert result.exit_code == 1
    chromium.open(path.as_uri())
    dom = Page(chromium.evaluate("document.documentElement.outerHTML"))
    assert len(dom.heatmaps) == 3
    for heatmap in dom.heatmaps:                      # sample 1 is 2x2: a 4x4 Jacobian
        assert marked(heatmap) == {"0,0", "1,1", "2,2", "3,3"}
    sizes = chromium.evaluate("[...document.querySelectorAll('svg.heatmap')]"
                              ".map(s => s.getBoundingClientRect().width)")
    assert len(sizes) == 3 and min(sizes) > 100      # laid out and visible
    strokes = chromium.evaluate(
        "['rect.cell.differs', 'rect.cell:not(.differs)'].map(q => getComputedStyle("
        "document.querySelector(q)).strokeWidth)")
    assert strokes == ["2.5px", "1px"]                # the outline is what the browser draws
    assert chromium.console_errors() == []
    assert all(url.startswith("file:") for url in chromium.requests()), chromium.requests()
    SCREENSHOT.parent.mkdir(exist_ok=True)
    chromium.screenshot(SCREENSHOT)
    shutil.copyfile(path, SCREENSHOT.with_suffix(".html"))
    print(f"screenshot of the HTML report: {SCREENSHOT}")
    assert SCREENSHOT.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@needs_chromium
def test_the_console_check_sees_errors_exceptions_and_blocked_loads(tmp_path, chromium):
    path = tmp_path / "broken.html"
    path.write_text('<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" '
                    "content=\"default-src 'none'; script-src 'unsafe-inline'\"></head><body>"
                    "<script>console.error('deliberate error');</script>"
                    "<script>throw new Error('deliberate exception');</script>"
                    '<img src="elsewhere.png"></body></html>')
    chromium.open(path.as_uri())
    errors = chromium.console_errors()
    assert any(e == "console.error: deliberate error" for e in errors), errors
    assert any("deliberate exception" in e and e.startswith("exception") for e in errors), errors
    assert any("elsewhere.png" in e for e in errors), errors   # blocked by the policy
