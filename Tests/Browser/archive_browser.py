#!/usr/bin/env python3
"""The archive browser and the loudness page in a real headless Chromium, driven by Selenium.

Run by Tests/EndToEndTests/ArchiveBrowserTests.swift against a real recd recording pink noise
in 2 s segments. Checks, in order:
  1. /browse?feed=F&from=A&to=B shows the range resolved (UTC) and its segments on the timeline;
  2. typed relative times ("-20s", "now") resolve, a malformed one shows recd's 400 in words;
  3. "Download clip" (FLAC, with proof) downloads the clip into --downloads, its progress runs
     to done (100 %), and "Download proof" downloads FILE.proof beside it; a proof of the
     segment being written is refused on the page with recd's reason;
  4. listening from 3 s ago (the segment being written) plays: <audio> currentTime > 0.5 s;
  5. /loudness for the same range shows the integrated loudness (printed for the test) and a
     plot; the browser's console logged no error;
  6. screenshots of both pages at 1920x1080 and 1280x720 into --screenshots.
Prints one line per check; exits non-zero with the reason on the first failure.
"""
import argparse
import os
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from status_page import fail, load_selenium, until  # noqa: E402


def viewport(driver, width, height):
    """The page's own size exactly (a window's size includes the browser's frame)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--feed", required=True)
    parser.add_argument("--from", dest="start", required=True)
    parser.add_argument("--to", dest="end", required=True)
    parser.add_argument("--downloads", required=True)
    parser.add_argument("--screenshots", required=True)
    args = parser.parse_args()
    load_selenium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--mute-audio", "--autoplay-policy=no-user-gesture-required", "--no-first-run",
                     "--disable-extensions", "--disable-background-networking", "--window-size=1920,1080"):
        options.add_argument(argument)
    options.add_experimental_option("prefs", {"download.default_directory": args.downloads,
                                              "download.prompt_for_download": False})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path="/usr/bin/chromedriver"))
    js = driver.execute_script
    try:
        driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": args.downloads})
        query = urllib.parse.urlencode({"feed": args.feed, "from": args.start, "to": args.end})
        began = time.monotonic()
        driver.get(args.url + "browse?" + query)
        shown = until("the range resolved and its segments drawn", 10, lambda: js(
            "const r = document.getElementById('resolved').textContent;"
            "return r && document.querySelectorAll('#timeline rect').length >= 2 ? r : null;"))
        print(f"ok: /browse shows {shown!r} with its segments", flush=True)

        # Typed forms, as recctl takes them; then a malformed one shows recd's words.
        js("document.getElementById('from').value = '-20s'; document.getElementById('to').value = 'now';")
        driver.find_element("id", "show").click()
        until("-20s to now resolved", 5, lambda: js(
            "return document.getElementById('resolved').textContent.includes('(20 s)');"))
        js("document.getElementById('from').value = 'half past ten';")
        driver.find_element("id", "show").click()
        error = until("a malformed time explained", 5, lambda: js(
            "return document.getElementById('rangeError').textContent;"))
        if "400" not in error or "now, -30s" not in error:
            fail(f"malformed time answered {error!r}")
        print(f"ok: typed times resolve; a malformed one says {error[:80]!r}…", flush=True)

        # Back to the range; download it as FLAC with its proof.
        js("document.getElementById('from').value = arguments[0]; document.getElementById('to').value = arguments[1];",
           args.start, args.end)
        driver.find_element("id", "show").click()
        until("the range shown again", 5, lambda: js(
            "return document.getElementById('rangeError').textContent === '' && "
            "document.querySelectorAll('#timeline rect').length >= 2;"))
        driver.find_element("id", "download").click()
        progress = until("the export's progress at done", 30, lambda: js(
            "const t = document.getElementById('progressText').textContent;"
            "return t.startsWith('done') && document.getElementById('progress').value === 1 ? t : null;"))
        print(f"ok: export progress {progress!r}", flush=True)
        clip = until("the clip downloaded", 15, lambda: next(
            (f for f in os.listdir(args.downloads) if f.endswith(".flac")), None))
        until("the proof link shown", 5, lambda: js("return !document.getElementById('proofLink').hidden;"))
        driver.find_element("id", "proofLink").click()
        until("the proof downloaded", 15, lambda: os.path.exists(os.path.join(args.downloads, clip + ".proof")))
        print(f"ok: downloaded {clip} and {clip}.proof", flush=True)

        # The segment being written: listen from 3 s ago.
        js("document.getElementById('listenFrom').value = '-3s';")
        driver.find_element("id", "listen").click()
        played = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const audio = document.getElementById('player');
            const deadline = Date.now() + 10000;
            (function check() {
              if (audio.currentTime > 0.5) return done(audio.currentTime);
              if (audio.error) return done('media error ' + audio.error.code + ': ' + audio.error.message);
              const e = document.getElementById('listenError').textContent;
              if (e) return done('listen error: ' + e);
              if (Date.now() > deadline) return done('currentTime stayed ' + audio.currentTime);
              setTimeout(check, 100);
            })();
        """)
        if not isinstance(played, (int, float)):
            fail(f"the newest audio did not play: {played}")
        print(f"ok: the segment being written plays (currentTime {played:.2f} s)", flush=True)
        viewport(driver, 1920, 1080)
        driver.save_screenshot(os.path.join(args.screenshots, "browse-1920x1080.png"))
        viewport(driver, 1280, 720)
        driver.save_screenshot(os.path.join(args.screenshots, "browse-1280x720.png"))

        # A proof of the segment being written cannot be: the page says why, in recd's words.
        # Just after a rotation the new segment has written nothing yet, and a range ending "now"
        # is then all finished segments, whose proof is rightly made (seen once: a 3 s clip ending
        # 0.18 s into a 2 s segment). Such an answer is told by the page's "done", and asked again.
        refused = ""
        for attempt in range(4):
            js("document.getElementById('from').value = '-3s'; document.getElementById('to').value = 'now';")
            driver.find_element("id", "download").click()
            answer = until("a proof into the open segment answered on the page", 15, lambda: js(
                "const e = document.getElementById('downloadError').textContent;"
                "const t = document.getElementById('progressText').textContent;"
                "return e ? ['refused', e] : (t.startsWith('done') ? ['done', t] : null);"))
            if answer[0] == "refused":
                refused = answer[1]
                break
            print(f"note: the range ended where the open segment had written nothing; asked again ({answer[1]!r})",
                  flush=True)
            time.sleep(0.7)
        if "being written" not in refused or "proof=no" not in refused or "--proof" in refused:
            fail(f"the refused proof says {refused!r}")
        print(f"ok: a proof into the open segment is refused: {refused[:90]!r}…", flush=True)

        # The loudness page of the same range.
        viewport(driver, 1920, 1080)
        driver.get(args.url + "loudness?" + query)
        integrated = until("the loudness figures", 20, lambda: js(
            "const v = document.getElementById('integrated').textContent; return v !== '–' ? v : null;"))
        drawn = js("const c = document.getElementById('plot'); const d = c.getContext('2d')"
                   ".getImageData(0, 0, c.width, c.height).data; let n = 0;"
                   "for (let i = 0; i < d.length; i += 4) if (d[i + 2] > 200 && d[i] < 120) n++; return n;")
        if drawn < 20:
            fail(f"the loudness plot drew {drawn} blue pixels")
        print(f"ok: page integrated {integrated} LUFS, plot drawn ({drawn} px)", flush=True)
        driver.save_screenshot(os.path.join(args.screenshots, "loudness-1920x1080.png"))
        viewport(driver, 1280, 720)
        js("window.dispatchEvent(new Event('resize'));")
        time.sleep(0.2)  # one frame for the canvas to redraw at the new size (nothing to wait on)
        driver.save_screenshot(os.path.join(args.screenshots, "loudness-1280x720.png"))

        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"
                  and "half+past+ten" not in e.get("message", "")
                  and "api/export?" not in e.get("message", "")
                  and "half past ten" not in e.get("message", "")]
        if errors:
            fail(f"console errors: {errors}")
        print(f"ok: no console errors; {time.monotonic() - began:.1f} s in the browser", flush=True)
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
