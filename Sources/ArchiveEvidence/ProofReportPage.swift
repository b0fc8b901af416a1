// `recctl archive prove --report FILE.html` and the console's `/api/report`: a `ProofCertificate` as one self-contained HTML page
// to print and sign (docs/archive-proof.md, "A report to print and sign"). Its style is inline and
// made for paper (A4, black on white, the verdict in words as well as colour); it has no script,
// no link, no image, nothing fetched: it opens the same in any browser, offline, years later.
// Every value is escaped: file names, app and stream names and the findings come from the
// archive, which whoever could write it chose.
//
// The file is replaced whole (temporary file, fsync, rename), never written through a link.
import Platform

public enum ProofReportPage {
    /// A page to print: each failing stretch names this many findings, the list this many; the
    /// rest are counted (`prove --json` has them all).
    static let failuresPerStretch = 8
    static let findingsListed = 40

    /// The page.
    public static func html(_ certificate: ProofCertificate) -> String {
        let verdict = certificate.holds ? "HOLDS" : "DOES NOT HOLD"
        let verdictClass = certificate.holds ? "holds" : "fails"
        var page = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="generator" content="\(escape(certificate.generator))">
            <title>\(escape(certificate.title)): \(verdict)</title>
            <style>\(style)</style>
            </head>
            <body>
            <h1>\(escape(certificate.title))</h1>
            <p class="verdict \(verdictClass)" id="verdict">\(verdict)</p>
            <p class="summary">\(escape(certificate.summary))</p>
            <h2>What was checked</h2>
            <table class="facts" id="checked">

            """
        for row in certificate.checked {
            page += "<tr><th>\(escape(row.label))</th><td>\(escape(row.value))</td></tr>\n"
        }
        page += "</table>\n"
        if !certificate.streams.isEmpty { page += streams(certificate.streams) }
        if !certificate.sources.isEmpty {
            page += "<h2>Cut from</h2>\n<table id=\"sources\"><tr><th>Segment, first frame + frames</th></tr>\n"
            for source in certificate.sources { page += "<tr><td class=\"path\">\(escape(source))</td></tr>\n" }
            page += "</table>\n"
        }
        page += findings(certificate.findings)
        if !certificate.heads.isEmpty { page += heads(certificate.heads) }
        if certificate.title == "Archive proof" { page += authorities(certificate.authorities) }
        page += """
            <h2>Attestation</h2>
            <p>I ran this check and this page is its unaltered report. Anyone may repeat it with
            <code>recctl archive prove</code> and the key above, or check each time-stamp token with
            <code>openssl ts -verify</code>.</p>
            <table class="sign">
            <tr><td>Name</td><td class="line"></td><td>Signature</td><td class="line"></td></tr>
            <tr><td>Place</td><td class="line"></td><td>Date</td><td class="line"></td></tr>
            </table>
            </body>
            </html>

            """
        return page
    }

    private static func streams(_ streams: [ProofCertificate.Stream]) -> String {
        var text = """
            <h2>Recorded time, per stream and day</h2>
            <table id="ranges">
            <tr><th>Stream, day</th><th>Recorded</th><th>Segments</th><th>Verdict</th><th>Trusted time</th></tr>

            """
        for stream in streams {
            for stretch in stream.stretches {
                let entries =
                    stretch.entries.count == 1
                    ? "entry \(stretch.entries.lowerBound)"
                    : "entries \(stretch.entries.lowerBound)-\(stretch.entries.upperBound)"
                var verdict = stretch.holds ? "holds" : "does not hold"
                for failure in stretch.failures.prefix(Self.failuresPerStretch) {
                    verdict += "<br><span class=\"finding\">\(escape(failure))</span>"
                }
                if stretch.failures.count > Self.failuresPerStretch {
                    let more = stretch.failures.count - Self.failuresPerStretch
                    verdict += "<br>and \(more) more (prove --json lists them all)"
                }
                let stamped: String
                if let before = stretch.existedBefore {
                    let how = stretch.stamped == stretch.segments ? "all" : "\(stretch.stamped) of \(stretch.segments)"
                    // A failing stretch's files are not what was stamped: only its entries were.
                    stamped =
                        stretch.holds
                        ? "\(how) existed before \(escape(before))"
                        : "\(how) of their chain entries stamped before \(escape(before))"
                } else {
                    stamped = "not time-stamped"
                }
                text += """
                    <tr class="\(stretch.holds ? "holds" : "fails")"><td>\(escape(stream.name))<br>\
                    \(escape(FileSystem.directoryName(of: stream.chain)))</td>\
                    <td>\(span(stretch))</td>\
                    <td>\(Readable.count(stretch.segments, "segment"))<br>\(entries)</td>\
                    <td>\(verdict)</td><td>\(stamped)</td></tr>

                    """
            }
        }
        return text + "</table>\n"
    }

    /// `2026-12-07<br>10:00:00 – 10:00:05 UTC<br>(5 s)`: the date once when both ends share it.
    private static func span(_ stretch: ProofCertificate.Stretch) -> String {
        let from = stretch.from.split(separator: " ")
        let to = stretch.to.split(separator: " ")
        let times: String
        if from.count == 3, to.count == 3, from[0] == to[0] {
            times =
                "\(escape(String(from[0])))<br><span class=\"time\">\(escape(String(from[1]))) – "
                + "\(escape(String(to[1]))) UTC</span>"
        } else {
            times = "\(escape(stretch.from)) –<br>\(escape(stretch.to))"
        }
        return times + "<br>(\(escape(stretch.length)))"
    }

    private static func findings(_ findings: [String]) -> String {
        guard !findings.isEmpty else {
            return "<h2>Findings</h2>\n<p id=\"findings\">None: everything checked holds.</p>\n"
        }
        var text = "<h2>Findings (\(findings.count))</h2>\n<ul id=\"findings\">\n"
        for finding in findings.prefix(Self.findingsListed) {
            text += "<li class=\"finding\">\(escape(finding))</li>\n"
        }
        text += "</ul>\n"
        if findings.count > Self.findingsListed {
            text +=
                "<p>and \(findings.count - Self.findingsListed) more: <code>recctl archive prove --json</code> lists "
                + "them all.</p>\n"
        }
        return text
    }

    private static func heads(_ heads: [ProofCertificate.Head]) -> String {
        var text = """
            <h2>Chain heads</h2>
            <table id="heads">
            <tr><th>Chain</th><th>Entries</th><th>SHA-256 of its last entry</th><th>Trusted time-stamps</th></tr>

            """
        for head in heads {
            let stamps = head.latest.map { "\(head.tokens); latest: \(escape($0))" } ?? "none"
            text +=
                "<tr><td class=\"path\">\(escape(head.chain))</td><td>\(head.entries)</td>"
                + "<td class=\"hash\">\(escape(head.hash))</td><td>\(stamps)</td></tr>\n"
        }
        return text + "</table>\n"
    }

    private static func authorities(_ authorities: [ProofCertificate.Authority]) -> String {
        guard !authorities.isEmpty else {
            return "<h2>Time-stamping authorities</h2>\n<p id=\"tsas\">No time-stamp token holds in this range.</p>\n"
        }
        var text = """
            <h2>Time-stamping authorities</h2>
            <table id="tsas">
            <tr><th>Subject</th><th>Certificate SHA-256</th><th>Tokens that hold</th></tr>

            """
        for authority in authorities {
            text +=
                "<tr><td>\(escape(authority.subject))</td><td class=\"hash\">\(escape(authority.fingerprint))</td>"
                + "<td>\(authority.tokens)</td></tr>\n"
        }
        return text + "</table>\n"
    }

    /// `text` safe in an HTML element or a quoted attribute: `& < > " '` as references, control
    /// characters (but tab and newline) as U+FFFD.
    static func escape(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            case "\t", "\n": result.unicodeScalars.append(scalar)
            default:
                if scalar.value < 0x20 || (0x7f...0x9f).contains(scalar.value) {
                    result += "\u{FFFD}"
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result
    }

    /// Why the report was not written, in words that say what to do.
    public struct WriteError: Error {
        public var message: String
    }

    /// Writes `html` to `path` whole; refuses a link or anything but a regular file there.
    public static func write(_ html: String, to path: String) throws(WriteError) {
        let kind: FileKind?
        do throws(SystemError) {
            kind = try FileSystem.kind(of: path)
            if kind == nil || kind == .regular { try AtomicFile.write(html, to: path, mode: 0o644) }
        } catch {
            throw WriteError(
                message: "cannot write the report to \(path): \(error.message); check that its folder exists and "
                    + "that you may write there")
        }
        if kind == .symbolicLink {
            throw WriteError(message: "\(path) is a symbolic link: not followed; remove it or name another file")
        } else if kind != nil && kind != .regular {
            throw WriteError(message: "\(path) is not a regular file; name a file to write the report to")
        }
    }

    /// Paper first: A4, black on white, the verdict framed and in words.
    static let style = """
        @page { size: A4; margin: 14mm; }
        html { color: #000; background: #fff; }
        body { font: 9.5pt/1.35 "DejaVu Sans", "Liberation Sans", Arial, sans-serif; margin: 0 auto; max-width: 190mm; }
        h1 { font-size: 15pt; margin: 0 0 4pt; }
        h2 { font-size: 11pt; margin: 10pt 0 3pt; border-bottom: 1px solid #000; break-after: avoid; }
        table { border-collapse: collapse; width: 100%; }
        th, td { border: 1px solid #777; padding: 2pt 4pt; text-align: left; vertical-align: top; }
        th { background: #eee; }
        tr { break-inside: avoid; }
        .facts th { width: 24%; }
        .verdict { display: inline-block; font-size: 14pt; font-weight: bold; border: 2pt solid; padding: 3pt 10pt;
          margin: 4pt 0; }
        .holds { color: #064; }
        .fails { color: #a00; }
        tr.holds, tr.fails { color: #000; }
        tr.fails td { background: #fdd; }
        .finding { color: #a00; }
        .path, .hash, code { font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 8pt;
          overflow-wrap: anywhere; }
        .time { white-space: nowrap; }
        .sign td { border: none; padding-top: 22pt; width: 12%; }
        .sign td.line { border-bottom: 1px solid #000; width: 38%; }
        @media print { tr.fails td { -webkit-print-color-adjust: exact; print-color-adjust: exact; } }
        """
}
