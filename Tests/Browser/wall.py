#!/usr/bin/env python3
"""The wall screen (/wall) and the status page (/) in a real headless Chromium, driven by Selenium.

Run by Tests/EndToEndTests/WallTests.swift against a real recd on a private jackd that records
two recd-signal tones (logger/mic at -12 dBFS, studio/desk at -20 dBFS). Checks, in order:
  1. /wall shows the box's health (not unknown, not an alarm), one tile per feed with moving
     meters on a dB scale and momentary/short-term LUFS; large type, the screen filled;
     screenshots at 1920x1080 and 1280x720;
  2. jackd SIGSTOPped: the banner turns alarm and names the stall (JACK server '...' stalled);
     SIGCONT: the stall leaves the banner by itself;
  3. the logger's tone stops (45 s of the server's time after its start): the logger's tile
     says "silent for ...", its meters rest, the banner names it;
  4. / (the status page): nav links, the health line, a UTC 24-hour header clock;
  5. recd SIGKILLed: both pages turn into the whole-screen alarm within 3 s ("recd
     unreachable since HH:MM:SS UTC"), their values greyed;
  6. no console error before the kill.
Prints one line per check; exits non-zero with the reason on the first failure.
"""
import argparse
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from status_page import fail, load_selenium, until  # noqa: E402


def js(driver, script, *args):
    return driver.execute_script(script, *args)


def banner(driver):
    return js(driver, "const b = document.getElementById('banner');"
                      "return {state: b.dataset.state, text: b.innerText};")


def feed(driver, name):
    return js(driver, "const t = document.querySelector('.feed[data-feed=\"' + arguments[0] + '\"]');"
                      "if (!t) return null;"
                      "return {state: t.dataset.state, words: t.querySelector('.words').textContent,"
                      " peaks: Array.from(t.querySelectorAll('.row')).map((r) => Number(r.dataset.peak)),"
                      " lufs: t.querySelector('.lufs').innerText, scale: t.querySelectorAll('.scale span').length};",
              name)


def shoot(driver, directory, name, width, height):
    driver.set_window_size(width, height)
    # The window's outer size includes no chrome in headless mode; make the viewport exact.
    inner = js(driver, "return [window.innerWidth, window.innerHeight];")
    if inner != [width, height]:
        driver.set_window_size(width + (width - inner[0]), height + (height - inner[1]))
    time.sleep(0.6)  # two meter frames at the new size
    path = os.path.join(directory, f"{name}-{width}x{height}.png")
    driver.save_screenshot(path)
    print(f"ok: screenshot {path}", flush=True)


def check_layout(driver, width, height):
    """Large type and the screen filled: what reads at 3 m."""
    facts = js(driver, """
        const feeds = document.getElementById('feeds').getBoundingClientRect();
        const px = (sel) => parseFloat(getComputedStyle(document.querySelector(sel)).fontSize);
        const bar = document.querySelector('.bar').getBoundingClientRect();
        return {feedsHeight: feeds.height, feedsWidth: feeds.width, name: px('.feed .name'),
                words: px('.feed .words'), state: px('#state'), clock: px('#clock .time'),
                lufs: px('.lufs div'), bar: bar.width, barHeight: bar.height,
                scrolls: document.documentElement.scrollHeight > window.innerHeight + 1};""")
    # At 3 m a capital must be about 1/300 of the distance (10 mm): 36 px on a 1080p 55" screen.
    scale = height / 1080
    wanted = {"name": 40, "words": 30, "state": 70, "clock": 60, "lufs": 44}
    small = {k: facts[k] for k, v in wanted.items() if facts[k] < v * scale}
    if small:
        fail(f"type too small at {width}x{height}: {small} (want {wanted} at 1080 rows, scaled)")
    if facts["feedsHeight"] < 0.7 * height or facts["feedsWidth"] < 0.95 * width:
        fail(f"the feeds fill {facts['feedsWidth']}x{facts['feedsHeight']} of {width}x{height}")
    if facts["bar"] < 0.5 * width or facts["barHeight"] < 30 * scale:
        fail(f"meter bars of {facts['bar']}x{facts['barHeight']} px at {width}x{height}")
    if facts["scrolls"]:
        fail(f"the wall scrolls at {width}x{height}")
    print(f"ok: layout at {width}x{height}: {facts}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--jackd-pid", type=int, required=True)
    parser.add_argument("--recd-pid", type=int, required=True)
    parser.add_argument("--server", required=True)
    parser.add_argument("--screenshots", required=True)
    args = parser.parse_args()
    load_selenium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--mute-audio", "--no-first-run", "--disable-extensions", "--disable-background-networking",
                     # Two windows watch recd at once: neither may have its timers throttled.
                     "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                     "--disable-backgrounding-occluded-windows", "--hide-scrollbars"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path="/usr/bin/chromedriver"))
    try:
        driver.set_window_size(1920, 1080)
        driver.get(args.url + "wall")
        first = until("the banner shows recd's health", 15,
                      lambda: (lambda b: b if b["state"] not in ("unknown", None) else None)(banner(driver)))
        if first["state"] == "alarm":
            fail(f"an alarm with both tones playing: {first}")
        print(f"ok: /wall banner {first['state']}: {first['text']!r}", flush=True)
        for name in ("logger/mic", "studio/desk"):
            shown = until(f"{name}'s tile with meters above -30 dBFS and loudness", 10, lambda: (
                lambda f: f if f and f["peaks"] and max(f["peaks"]) > -30 and f["scale"] >= 8
                and "—" not in f["lufs"] else None)(feed(driver, name)))
            print(f"ok: {name}: {shown}", flush=True)
        hold = until("a peak hold mark", 5, lambda: js(
            driver, "return Array.from(document.querySelectorAll('.row')).map((r) => Number(r.dataset.hold))"
                    ".every((h) => h > -30) ? true : null;"))
        shoot(driver, args.screenshots, "wall", 1920, 1080)
        check_layout(driver, 1920, 1080)
        shoot(driver, args.screenshots, "wall", 1280, 720)
        check_layout(driver, 1280, 720)
        driver.set_window_size(1920, 1080)
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        if errors:
            fail(f"console errors: {errors}")

        # 2. The server frozen: the banner names the stall, then heals by itself.
        os.kill(args.jackd_pid, signal.SIGSTOP)
        try:
            stalled = until("the banner naming the JACK stall", 8, lambda: (
                lambda b: b if b["state"] == "alarm" and f"JACK server '{args.server}' stalled" in b["text"]
                else None)(banner(driver)))
            print(f"ok: jackd stopped: {stalled['text']!r}", flush=True)
            shoot(driver, args.screenshots, "wall-stalled", 1920, 1080)
        finally:
            os.kill(args.jackd_pid, signal.SIGCONT)
        healed = until("the stall gone from the banner after SIGCONT", 8, lambda: (
            lambda b: b if "stalled" not in b["text"] and b["state"] == first["state"] else None)(banner(driver)))
        print(f"ok: healed by itself: {healed['state']}", flush=True)

        # 3. A silent feed, in words: the logger's tone stops by itself.
        silent = until("logger/mic shown 'silent for ...' once its tone stopped", 60, lambda: (
            lambda f: f if f and f["state"] == "alarm" and re.search(r"silent for \d+ s", f["words"])
            and f["peaks"] and max(f["peaks"]) < -90 else None)(feed(driver, "logger/mic")), interval=0.25)
        text = banner(driver)["text"]
        if "logger/mic silent for" not in text:
            fail(f"the banner does not name the silent feed: {text!r}")
        print(f"ok: silent feed: {silent['words']!r}", flush=True)
        shoot(driver, args.screenshots, "wall-silent", 1920, 1080)
        wall = driver.current_window_handle

        # 4. The status page in a second window.
        driver.switch_to.new_window("window")
        driver.set_window_size(1920, 1080)
        driver.get(args.url)
        page = until("the status page's health line", 10, lambda: js(
            driver, "const h = document.getElementById('health');"
                    "return h && h.dataset.state === 'alarm' ? h.textContent : null;"))
        links = js(driver, "return Array.from(document.querySelectorAll('nav a')).map((a) => a.getAttribute('href'));")
        for wanted in ("wall", "day", "browse", "loudness"):
            if wanted not in links:
                fail(f"nav has no link to {wanted}: {links}")
        clock = until("the header clock in UTC, 24-hour", 5, lambda: js(
            driver, "const t = document.getElementById('connection').textContent;"
                    "return /^updated \\d\\d:\\d\\d:\\d\\d UTC$/.test(t) ? t : null;"))
        silence_cell = until("the recorder's silence in words", 5, lambda: js(
            driver, "const c = Array.from(document.querySelectorAll('#recorders td.silence'))"
                    ".find((c) => c.dataset.silent === 'yes'); return c ? c.textContent : null;"))
        if not re.match(r"silent for \d+ s \(since \d\d:\d\d:\d\d UTC\)", silence_cell):
            fail(f"silence shown as {silence_cell!r}")
        print(f"ok: / has nav {links}, health {page!r}, clock {clock!r}, {silence_cell!r}", flush=True)
        shoot(driver, args.screenshots, "status", 1920, 1080)
        status = driver.current_window_handle
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        if errors:
            fail(f"console errors: {errors}")

        # 5. recd killed: both pages are an alarm within 3 s of the kill, by the pages' own clocks.
        killed = time.time() * 1000
        os.kill(args.recd_pid, signal.SIGKILL)
        for handle, name, stale_text, greyed in (
                (status, "/", "document.getElementById('stale').textContent",
                 "getComputedStyle(document.querySelector('main')).filter"),
                (wall, "/wall", "document.getElementById('banner').innerText",
                 "getComputedStyle(document.getElementById('feeds')).filter")):
            driver.switch_to.window(handle)
            shown = until(f"{name} turned into the alarm", 6, lambda: js(
                driver, "if (document.body.dataset.stale !== 'yes') return null;"
                        f"return {{at: Number(document.body.dataset.staleAt), text: {stale_text},"
                        f" filter: {greyed}, state: (document.getElementById('banner') || {{dataset: {{}}}})"
                        ".dataset.state};"))
            after = (shown["at"] - killed) / 1000
            if after > 3.0:
                fail(f"{name} showed the alarm {after:.2f} s after the kill")
            if "recd unreachable" not in shown["text"] or not re.search(r"since \d\d:\d\d:\d\d UTC", shown["text"]):
                fail(f"{name}'s alarm says {shown['text']!r}")
            if "grayscale" not in shown["filter"]:
                fail(f"{name}'s old values are not greyed: {shown['filter']!r}")
            print(f"ok: {name} alarm {after:.2f} s after the kill: {shown['text']!r}", flush=True)
        shoot(driver, args.screenshots, "wall-unreachable", 1920, 1080)
        driver.switch_to.window(status)
        shoot(driver, args.screenshots, "status-unreachable", 1920, 1080)
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
