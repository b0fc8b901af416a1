#!/usr/bin/env python3
"""The status page in a real headless Chromium, driven by Selenium.

Run by Tests/EndToEndTests/StatusPageTests.swift against a real recd that records a
recd-signal tone which goes silent after a few seconds. Checks, in order:
  1. the page loads and shows JACK connected;
  2. the input meters move (peak above -30 dBFS) while the tone plays, and rest (below
     -90 dBFS) once it stops; the recorder is then shown silent (silence_seconds = 1);
  3. a recent segment's <audio> element plays (currentTime > 1 s);
  4. /archive/ answers a Range request with 206, Content-Range and audio/flac, and refuses
     paths outside the rules with 404 (.., %2e%2e, .partial, unknown, a symlink in the index);
  5. the browser's console logged no error (goog:loggingPrefs browser log, SEVERE).
Prints one line per check; exits non-zero with the reason on the first failure.

Selenium comes from PyPI into a virtual environment (scripts/test makes it):
RECD_SELENIUM_VENV names it; chromium and chromedriver are Debian's.
"""
import argparse
import glob
import os
import site
import sys
import time
import urllib.error
import urllib.request


def load_selenium():
    venv = os.environ.get("RECD_SELENIUM_VENV", "")
    for directory in glob.glob(os.path.join(venv, "lib", "python3*", "site-packages")):
        site.addsitedir(directory)
    try:
        import selenium  # noqa: F401
    except ImportError:
        sys.exit(f"selenium is not installed in RECD_SELENIUM_VENV={venv!r}: scripts/test installs it "
                 "(python3 -m venv, pip install selenium)")


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def until(what, timeout, probe, interval=0.1):
    """Polls probe() until it returns a true value; fails naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    fail(f"{what} within {timeout} s (last: {last!r})")


def http(url, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status, dict(reply.headers), reply.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def check_archive_route(base, file, symlinked):
    status, headers, body = http(base + "archive/" + file, {"Range": "bytes=0-3"})
    if status != 206 or body != b"fLaC" or not headers.get("Content-Range", "").startswith("bytes 0-3/"):
        fail(f"Range request for {file}: {status} {headers} {body[:16]!r}")
    if not headers.get("Content-Type", "").startswith("audio/flac"):
        fail(f"content type of {file}: {headers.get('Content-Type')}")
    status, _, body = http(base + "archive/" + file)
    size = int(headers["Content-Range"].split("/")[1])
    if status != 200 or len(body) != size:
        fail(f"whole {file}: {status}, {len(body)} bytes of {size}")
    refused = [
        "archive/" + file + ".partial",
        "archive/%2e%2e/recd.conf",
        "archive/" + file.split("/")[0] + "/%2e%2e/%2e%2e/recd.conf",
        "archive/index.sqlite",
        "archive/nothing/here.flac",
    ]
    if symlinked:
        refused.append("archive/" + symlinked)
    for path in refused:
        status, _, _ = http(base + path)
        if status != 404:
            fail(f"{path} answered {status}, want 404")
    print(f"ok: /archive/ serves {file} (206 with Range, 200 whole, audio/flac) and refuses "
          f"{len(refused)} paths with 404", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="the page, e.g. http://127.0.0.1:9720/")
    parser.add_argument("--symlinked", default="", help="an indexed segment replaced by a symlink (must 404)")
    args = parser.parse_args()
    load_selenium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--mute-audio", "--autoplay-policy=no-user-gesture-required", "--no-first-run",
                     "--disable-extensions", "--disable-background-networking"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path="/usr/bin/chromedriver"))
    try:
        began = time.monotonic()
        driver.get(args.url)
        until("JACK shown as connected", 10,
              lambda: driver.execute_script("const e = document.getElementById('jack-state'); "
                                            "return e && e.textContent === 'connected';"))
        print(f"ok: page loaded, JACK connected ({time.monotonic() - began:.1f} s)", flush=True)

        peaks = "return Array.from(document.querySelectorAll('.meter[data-direction=input]'))" \
                ".map((e) => Number(e.dataset.peak));"
        playing = until("input meters above -30 dBFS while the tone plays", 8,
                        lambda: (lambda p: p if p and max(p) > -30 else None)(driver.execute_script(peaks)))
        print(f"ok: meters move with the tone: {playing}", flush=True)
        resting = until("input meters below -90 dBFS after the tone stops (25 s after it began)", 35,
                        lambda: (lambda p: p if p and max(p) < -90 else None)(driver.execute_script(peaks)))
        print(f"ok: meters rest after the tone: {resting}", flush=True)
        silent = until("the recorder shown silent after the tone stops", 8, lambda: driver.execute_script(
            "const c = document.querySelector('#recorders td.silence'); "
            "return c && c.dataset.silent === 'yes' ? c.textContent : null;"))
        print(f"ok: recorder shown {silent!r}", flush=True)

        # The newest segment of at least 1.5 s, not the one the test replaced by a symlink.
        file = until("a recent segment of at least 1.5 s listed", 15, lambda: driver.execute_script(
            "const row = Array.from(document.querySelectorAll('#segments tbody tr[data-file]'))"
            ".find((r) => Number(r.dataset.seconds) >= 1.5 && r.dataset.file !== arguments[0]);"
            "return row ? row.dataset.file : null;", args.symlinked))
        played = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const audio = Array.from(document.querySelectorAll('#segments tr[data-file]'))
              .find((r) => r.dataset.file === arguments[0]).querySelector('audio');
            audio.muted = true;
            const deadline = Date.now() + 8000;
            audio.play().catch((e) => done('play() failed: ' + e));
            (function check() {
              if (audio.currentTime > 1) return done(audio.currentTime);
              if (audio.error) return done('media error ' + audio.error.code + ': ' + audio.error.message);
              if (Date.now() > deadline) return done('currentTime stayed ' + audio.currentTime);
              setTimeout(check, 100);
            })();
        """, file)
        if not isinstance(played, (int, float)):
            fail(f"segment {file} did not play: {played}")
        print(f"ok: segment {file} plays (currentTime {played:.2f} s)", flush=True)

        check_archive_route(args.url, file, args.symlinked)

        errors = [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]
        if errors:
            fail(f"console errors: {errors}")
        print(f"ok: no console errors; {time.monotonic() - began:.1f} s in the browser", flush=True)
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
