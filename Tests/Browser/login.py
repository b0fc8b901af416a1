#!/usr/bin/env python3
"""A login to recd's pages in a real headless Chromium, driven by Selenium, over HTTPS.

Run by Tests/EndToEndTests/WebSecurityTests.swift inside a network namespace joined to recd's
by a veth pair, against recd's self-signed certificate (--ignore-certificate-errors: the
certificate itself is checked by openssl and curl in the Swift test). Checks, in order:
  1. `/` sends a browser without a session to /login;
  2. a wrong password shows the login page's message and sets no session;
  3. the right one reaches `/` (the status page loads: JACK shown);
  4. the session cookie is HttpOnly, Secure, SameSite=Strict; the CSRF cookie Secure, Strict;
  5. /logout's button logs out: back at /login, and `/` sends the browser to /login again.
Screenshots of the login page: $RECD_SCREENSHOTS or .build/screenshots/login-WxH.png.
Prints one line per check; exits non-zero with the reason on the first failure.
"""
import argparse
import os
import sys
import time
from urllib.parse import urlparse


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from status_page import fail, load_selenium  # noqa: E402


def until(what, timeout, probe, interval=0.1):
    """Polls probe() until it returns a true value (an exception counts as not yet: the page
    may be between documents); fails naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except Exception as error:
            last = None
            reason = repr(error)
        else:
            reason = None
        if last:
            return last
        time.sleep(interval)
    fail(f"{what} within {timeout} s (last: {last!r} {reason or ''})")


def screenshots_directory():
    directory = os.environ.get("RECD_SCREENSHOTS") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", ".build", "screenshots")
    os.makedirs(directory, exist_ok=True)
    return directory


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="recd's pages, e.g. https://10.231.0.1:9721/")
    parser.add_argument("--account", required=True)
    parser.add_argument("--password", required=True)
    args = parser.parse_args()
    load_selenium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--mute-audio", "--no-first-run", "--disable-extensions",
                     "--disable-background-networking", "--ignore-certificate-errors"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(executable_path="/usr/bin/chromedriver"))
    base = args.url.rstrip("/")
    try:
        driver.get(base + "/")
        until("the browser sent to /login", 10, lambda: urlparse(driver.current_url).path == "/login")
        print(f"ok: / without a session went to {driver.current_url}", flush=True)
        for width, height in ((1920, 1080), (1280, 720)):
            driver.set_window_size(width, height)
            driver.save_screenshot(os.path.join(screenshots_directory(), f"login-{width}x{height}.png"))

        driver.find_element(By.ID, "account").send_keys(args.account)
        driver.find_element(By.ID, "password").send_keys("not-the-password")
        driver.find_element(By.ID, "login").click()
        message = until("the wrong password's message", 10,
                        lambda: driver.find_element(By.ID, "message").text)
        if "Wrong account or password" not in message:
            fail(f"the wrong password's message: {message!r}")
        if any(cookie["name"] == "recd_session" for cookie in driver.get_cookies()):
            fail("a wrong password set a session cookie")
        print(f"ok: a wrong password shows {message!r} and sets no session", flush=True)

        driver.find_element(By.ID, "account").send_keys(args.account)
        driver.find_element(By.ID, "password").send_keys(args.password)
        driver.find_element(By.ID, "login").click()
        until("/ after the login", 10, lambda: urlparse(driver.current_url).path == "/")
        until("the status page (JACK connected)", 15,
              lambda: driver.execute_script("const e = document.getElementById('jack-state'); "
                                            "return e && e.textContent === 'connected';"))
        print("ok: logged in, / shows JACK connected", flush=True)

        cookies = {cookie["name"]: cookie for cookie in driver.get_cookies()}
        session = cookies.get("recd_session")
        if not session or not session.get("httpOnly") or not session.get("secure") \
                or session.get("sameSite") != "Strict":
            fail(f"session cookie: {session}")
        csrf = cookies.get("recd_csrf")
        if not csrf or not csrf.get("secure") or csrf.get("sameSite") != "Strict":
            fail(f"CSRF cookie: {csrf}")
        print("ok: recd_session HttpOnly Secure SameSite=Strict; recd_csrf Secure SameSite=Strict", flush=True)

        driver.get(base + "/logout")
        until("the logout button", 10, lambda: driver.find_element(By.ID, "logout"))
        driver.find_element(By.ID, "logout").click()
        until("/login after the logout", 10, lambda: urlparse(driver.current_url).path == "/login")
        driver.get(base + "/")
        until("/ sends the browser to /login again", 10, lambda: urlparse(driver.current_url).path == "/login")
        print("ok: logged out; / sends the browser to /login again", flush=True)
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
