#!/usr/bin/env python3
"""Reads the HTML report of `recctl archive prove --report FILE.html` as a browser would.

Run by Tests/EndToEndTests/ProofReportEndToEndTests.swift. Parses FILE with python3's
html.parser and prints one JSON object: the elements seen, those a self-contained page to
print must not have (script, link, img, iframe, object, embed, base, form, a src/href/on*
attribute, url( in the style), the verdict, every table's rows as cell texts by table id, the
findings, and the whole text. Exits 1 when the parser stops on the file.

With --browser it also opens FILE in a real headless Chromium (Selenium from
RECD_SELENIUM_VENV, as Tests/Browser/status_page.py) and adds what the browser saw: the
title, the verdict's text, the console's errors, and the number of A4 pages Chromium prints it
on (its print-to-PDF, the pages counted in the PDF). With --url URL the browser opens the page
where recd serves it (`/api/report`: its headers, the Content-Security-Policy among them, in
force) instead of FILE, which holds the same page as curl fetched it.
"""
import argparse
import base64
import glob
import json
import os
import re
import site
import sys
from html.parser import HTMLParser

FORBIDDEN_TAGS = {"script", "link", "img", "iframe", "object", "embed", "base", "form", "svg", "video",
                  "audio", "frame", "frameset", "meta-refresh"}


class Reader(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = []
        self.forbidden = []
        self.stack = []
        self.tables = {}
        self.table = None
        self.row = None
        self.cell = None
        self.text = []
        self.verdict = None
        self.in_verdict = False
        self.findings = []
        self.finding = None
        self.in_style = False
        self.style = ""

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        attributes = dict(attrs)
        if tag in FORBIDDEN_TAGS:
            self.forbidden.append(tag)
        for name, value in attrs:
            if name in ("src", "href", "action", "srcset") or name.startswith("on"):
                self.forbidden.append("%s[%s=%r]" % (tag, name, value))
        if tag == "meta" and attributes.get("http-equiv", "").lower() == "refresh":
            self.forbidden.append("meta refresh")
        if tag == "style":
            self.in_style = True
        if tag == "table":
            self.table = attributes.get("id") or "table%d" % len(self.tables)
            self.tables[self.table] = []
        elif tag == "tr" and self.table is not None:
            self.row = []
        elif tag in ("td", "th") and self.row is not None:
            self.cell = []
        elif tag == "br" and self.cell is not None:
            self.cell.append("\n")
        if attributes.get("id") == "verdict":
            self.in_verdict = True
            self.verdict = ""
        if tag == "li" and "finding" in (attributes.get("class") or ""):
            self.finding = []

    def handle_endtag(self, tag):
        if tag == "style":
            self.in_style = False
        elif tag in ("td", "th") and self.cell is not None and self.row is not None:
            self.row.append("".join(self.cell).strip())
            self.cell = None
        elif tag == "tr" and self.row is not None and self.table is not None:
            self.tables[self.table].append(self.row)
            self.row = None
        elif tag == "table":
            self.table = None
        elif tag == "p" and self.in_verdict:
            self.in_verdict = False
        elif tag == "li" and self.finding is not None:
            self.findings.append("".join(self.finding))
            self.finding = None

    def handle_data(self, data):
        if self.in_style:
            self.style += data
            return
        self.text.append(data)
        if self.cell is not None:
            self.cell.append(data)
        if self.in_verdict:
            self.verdict += data
        if self.finding is not None:
            self.finding.append(data)


def browse(path, url=None):
    venv = os.environ.get("RECD_SELENIUM_VENV", "")
    for directory in glob.glob(os.path.join(venv, "lib", "python3*", "site-packages")):
        site.addsitedir(directory)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run",
                     "--disable-extensions", "--disable-background-networking"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path="/usr/bin/chromedriver"))
    try:
        driver.get(url or "file://" + os.path.abspath(path))
        seen = {
            "title": driver.title,
            "verdict": driver.execute_script(
                "const e = document.getElementById('verdict'); return e ? e.textContent : null;"),
            "scripts": driver.execute_script("return document.scripts.length;"),
            "errors": [entry["message"] for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"],
        }
        pdf = base64.b64decode(driver.execute_cdp_cmd("Page.printToPDF", {
            "paperWidth": 8.27, "paperHeight": 11.69, "preferCSSPageSize": True, "printBackground": True,
        })["data"])
        seen["pages"] = len(re.findall(rb"/Type\s*/Page[^s]", pdf))
        return seen
    finally:
        driver.quit()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--browser", action="store_true")
    parser.add_argument("--url")
    args = parser.parse_args()
    with open(args.file, encoding="utf-8") as page:
        html = page.read()
    reader = Reader()
    try:
        reader.feed(html)
        reader.close()
    except Exception as error:  # html.parser is lenient; anything it stops on is a failure
        print(json.dumps({"error": repr(error)}))
        sys.exit(1)
    if "url(" in reader.style or "@import" in reader.style:
        reader.forbidden.append("a resource in the style")
    result = {
        "doctype": html.lstrip().lower().startswith("<!doctype html>"),
        "tags": sorted(set(reader.tags)),
        "forbidden": reader.forbidden,
        "verdict": reader.verdict,
        "tables": reader.tables,
        "findings": reader.findings,
        "text": "".join(reader.text),
    }
    if args.browser:
        result["browser"] = browse(args.file, args.url)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
