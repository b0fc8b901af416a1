// What recd trusts of a TSA, end to end (docs/archive-proof.md, "Trusted time-stamps"): the real
// recd recording on a real jackd asks the test's real TSA (TestTSA: `openssl ts -reply` behind
// Tests/TSA/tsa_server.py, the test's own CA). `tsa_certificate` pins the signer: a token from
// another certificate is refused (never stored, the reason in status and the log), the pinned
// one is taken. An HTTPS TSA is trusted through `tsa_ca_file`, and refused with a clear error
// under another CA. A hostile TSA — 1 MiB of answer, an answer dripped a byte at a time, garbage —
// costs a bounded attempt each, is refused, and the recording goes on a segment a second. A day's
// last head is stamped at its close, without waiting for the interval: recd runs with its wall
// clock moved to just before midnight (libfaketime, realtime only: JACK's monotonic time and
// recd's stay true).
import ArchiveProof
import ControlProtocol
import Foundation
import Platform
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The SHA-256 fingerprint of a PEM certificate, as `openssl x509 -fingerprint -sha256` prints it.
private func fingerprint(_ pem: String) throws -> String {
    let printed = try runTool("openssl", ["x509", "-noout", "-fingerprint", "-sha256", "-in", pem])
    return try #require(printed.stdout.split(separator: "=").last?.trimmingCharacters(in: .whitespacesAndNewlines))
}

extension StampedLogger {
    /// status.timeStamps.lastError, or "".
    func lastError() -> String { ((try? timeStamps())??["lastError"]?.stringValue) ?? "" }

    /// The segments chained in `seconds` of recording from now.
    func chainedDuring(_ seconds: Double, chain: String) -> Int {
        let before = signedEntries(chain)
        Thread.sleep(forTimeInterval: seconds)
        return signedEntries(chain) - before
    }
}

@Suite("what recd trusts of a TSA, against real TSAs", .serialized)
struct TimeStampTrustEndToEndTests {
    @Test(
        "tsa_certificate pins the TSA: a token signed by another certificate is refused, not stored, the reason in status and the log; the pinned certificate's tokens are taken"
    )
    func pinnedCertificate() throws {
        let tsa = try TestTSA()
        let stranger = try makeTemporaryDirectory("recd-tsa-stranger")
        defer { try? FileManager.default.removeItem(atPath: stranger) }
        try TestTSA.makeAuthority(in: stranger, name: "stranger TSA")
        let other = try fingerprint(stranger + "/tsa.pem")
        do {
            // Pinned to another certificate (as a fingerprint): the TSA answers, recd refuses.
            let logger = try StampedLogger(tsa: tsa, interval: 2, evidence: "tsa_certificate = \(other)")
            let chain = try logger.chain()
            #expect(
                eventually(timeout: 30) {
                    tsa.queries >= 2 && logger.lastError().contains("not the pinned tsa_certificate")
                }, "queries \(tsa.queries), lastError \(logger.lastError())")
            let error = logger.lastError()
            #expect(error.contains(try fingerprint(tsa.directory + "/tsa.pem")) && error.contains(other), "\(error)")
            #expect(logger.stamped(chain).isEmpty, "no token stored: \(logger.stamped(chain))")
            #expect(((try logger.timeStamps())?["backlog"]?.intValue ?? 0) >= 1)
            #expect(logger.daemon.log.contains("not the pinned tsa_certificate"), "\(logger.daemon.log)")
            #expect(logger.chainedDuring(3, chain: chain) >= 2, "the recording goes on")
        }
        // Pinned to the TSA's own certificate (as its PEM file): taken.
        let logger = try StampedLogger(
            tsa: tsa, interval: 2, evidence: "tsa_certificate = \(tsa.directory)/tsa.pem")
        let chain = try logger.chain()
        #expect(eventually(timeout: 30) { logger.stamped(chain).count >= 2 }, "\(logger.lastError())")
        #expect(logger.lastError().isEmpty)
    }

    @Test(
        "an HTTPS TSA: trusted through tsa_ca_file, its tokens hold for openssl ts -verify; under another CA it is refused with an error that names tsa_ca_file"
    )
    func httpsTSA() throws {
        let tsa = try TestTSA(tls: true)
        #expect(tsa.url.hasPrefix("https://"))
        do {
            let logger = try StampedLogger(tsa: tsa, interval: 2)
            let chain = try logger.chain()
            #expect(eventually(timeout: 30) { logger.stamped(chain).count >= 2 }, "\(logger.lastError())")
            let count = try #require(logger.stamped(chain).first)
            let entry = try logger.entries(chain)[count - 1]
            let verified = try runTool(
                "openssl",
                [
                    "ts", "-verify", "-digest", entry.hash.hex, "-in", logger.archive + "/" + chain + ".\(count).tsr",
                    "-CAfile", tsa.roots,
                ])
            #expect(verified.stdout.contains("Verification: OK"), "\(verified.stdout) \(verified.stderr)")
        }
        // The same TSA under another root: curl refuses its server certificate.
        let stranger = try makeTemporaryDirectory("recd-tsa-stranger")
        defer { try? FileManager.default.removeItem(atPath: stranger) }
        try TestTSA.makeAuthority(in: stranger, name: "stranger TSA")
        let logger = try StampedLogger(tsa: tsa, interval: 2, roots: stranger + "/ca.pem")
        let chain = try logger.chain()
        #expect(
            eventually(timeout: 30) { logger.lastError().contains("HTTPS certificate is not one") },
            "\(logger.lastError())")
        let error = logger.lastError()
        print("an HTTPS TSA under another CA: \(error)")
        #expect(error.contains("tsa_ca_file \(stranger)/ca.pem") && error.contains(tsa.url), "\(error)")
        #expect(logger.stamped(chain).isEmpty)
        #expect(logger.daemon.log.contains("HTTPS certificate is not one"))
    }

    @Test(
        "hostile TSAs (1 MiB answered, an answer dripped a byte every 0.5 s, 512 random bytes): each attempt bounded and refused with its reason, nothing stored, the recording chained a segment a second throughout"
    )
    func hostileTSAs() throws {
        let huge = try TestTSA(mode: "huge")
        let slow = try TestTSA(mode: "slow")
        let garbage = try TestTSA(mode: "garbage")
        let logger = try StampedLogger(tsa: huge, interval: 2, urls: [huge.url, slow.url, garbage.url])
        let chain = try logger.chain()
        let began = Date()
        let entriesAtStart = logger.signedEntries(chain)
        // Every TSA asked at least twice: an attempt ends (curl's limits), and the next comes.
        var error = ""
        #expect(
            eventually(timeout: 60) {
                error = logger.lastError()
                return huge.queries >= 2 && slow.log.filter { $0 == "hostile slow" }.count >= 2 && garbage.queries >= 2
                    && error.contains(garbage.url)
            }, "queries: \(huge.log) \(slow.log) \(garbage.log); \(error)")
        print("three hostile TSAs: \(error)")
        #expect(error.contains("\(huge.url): the answer is over 64 KiB"), "\(error)")
        #expect(error.contains("\(slow.url): no answer ("), "\(error)")
        #expect(error.contains("\(garbage.url) answered a token that does not hold"), "\(error)")
        // The dripping TSA saw recd hang up within its limit (2 s with a 2 s interval), long
        // before its 60 s answer ended.
        #expect(eventually(timeout: 15) { slow.log.contains { $0.hasPrefix("hostile slow: client went away") } })
        #expect(logger.stamped(chain).isEmpty)
        // The recording went on: a segment a second was chained meanwhile, and more still.
        let elapsed = Date().timeIntervalSince(began)
        let chained = logger.signedEntries(chain) - entriesAtStart
        #expect(Double(chained) >= elapsed - 3, "\(chained) segments chained in \(elapsed) s")
        #expect(logger.chainedDuring(3, chain: chain) >= 2)
        let status = try #require(logger.daemon.recctl("--json", "status").json)
        let reasons = status["health"]?["reasons"]?.arrayValue ?? []
        #expect(reasons.contains { $0["reason"]?.stringValue == "tsa-behind" }, "\(reasons)")
        #expect(try logger.daemon.recctl("record", "stop", "logger").status == 0)
        let tags = try FileSystem.files(under: logger.archive, withSuffix: ".flac").map {
            try runTool("metaflac", ["--export-tags-to=-", $0]).stdout
        }
        // A gap JACK made itself (an xrun of a starved dummy driver) is not the TSA's doing.
        let xruns = try logger.daemon.xruns()
        #expect(xruns > 0 || !tags.contains { $0.contains("GAPS=") }, "a gap in the recording")
    }

    @Test(
        "a day's close: the last head of a stream's day is stamped as soon as the next day's first segment is chained, not an interval (600 s) later"
    )
    func stampAtTheDaysClose() throws {
        let library = ["x86_64-linux-gnu", "aarch64-linux-gnu"].map {
            "/usr/lib/\($0)/faketime/libfaketimeMT.so.1"
        }.first { FileManager.default.fileExists(atPath: $0) }
        let preload = try #require(library, "libfaketime (scripts/packages.list)")
        // recd's wall clock 40 s before the next UTC midnight.
        let now = Date().timeIntervalSince1970
        let offset = Int((86_400 - now.truncatingRemainder(dividingBy: 86_400)).rounded(.down)) - 40
        let tsa = try TestTSA()
        let logger = try StampedLogger(
            tsa: tsa, interval: 600,
            environment: [
                "LD_PRELOAD": preload, "FAKETIME": "+\(offset)", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            ])
        func chains() -> [String] {
            FileSystem.files(under: logger.archive, withSuffix: ".chain").compactMap {
                ChainLayout.relative($0, to: logger.archive)
            }.sorted()
        }
        // Two days: the first chain's day, and the next one's once midnight has passed.
        var found: [String] = []
        #expect(
            eventually(timeout: 60) {
                found = chains()
                return found.count == 2
            }, "chains: \(found); log: \(logger.daemon.log.suffix(2000))")
        try #require(found.count == 2)
        let (first, second) = (found[0], found[1])
        #expect(FileSystem.directoryName(of: first) < FileSystem.directoryName(of: second))
        // The first day's last head: stamped at once, though its previous stamp was less than
        // the 600 s interval ago.
        var lastEntry = 0
        #expect(
            eventually(timeout: 15) {
                lastEntry = logger.signedEntries(first)
                return lastEntry >= 2 && logger.stamped(first).last == lastEntry
            }, "tokens of \(first): \(logger.stamped(first)), signed \(lastEntry); \(logger.lastError())")
        let tokens = logger.stamped(first)
        // The first advance (nothing stamped before) and the close: nothing between, the
        // interval held.
        #expect(tokens.count == 2 && tokens.first ?? 0 < lastEntry, "\(tokens)")
        let entries = try logger.entries(first)
        #expect(entries.count == lastEntry, "no entry after the close")
        let verified = try runTool(
            "openssl",
            [
                "ts", "-verify", "-digest", entries[lastEntry - 1].hash.hex, "-in",
                logger.archive + "/" + first + ".\(lastEntry).tsr", "-CAfile", tsa.roots,
            ])
        #expect(verified.stdout.contains("Verification: OK"), "\(verified.stdout) \(verified.stderr)")
        // The next day's first head is stamped too (its first advance).
        #expect(eventually(timeout: 15) { !logger.stamped(second).isEmpty })
    }

    @Test(
        "a head left waiting at a stop (the TSA gone) is stamped after the next start with the TSA back, though its chain never advances again"
    )
    func waitingHeadSurvivesARestart() throws {
        let tsa = try TestTSA()
        // A 600 s interval: after the first stamp, no head is stamped for the rest of the test
        // but by the restart.
        let logger = try StampedLogger(tsa: tsa, interval: 600)
        let chain = try logger.chain()
        #expect(eventually(timeout: 30) { !logger.stamped(chain).isEmpty }, "\(logger.lastError())")
        tsa.stop()
        #expect(eventually(timeout: 30) { logger.signedEntries(chain) >= (logger.stamped(chain).last ?? 0) + 3 })
        #expect(try logger.daemon.recctl("record", "stop", "logger").status == 0)
        // The recording's last segment chained: the head that waits.
        let day = logger.archive + "/" + FileSystem.directoryName(of: chain)
        var last = 0
        #expect(
            eventually(timeout: 15) {
                last = logger.signedEntries(chain)
                return FileSystem.files(under: day, withSuffix: ".flac").count == last
            })
        #expect(!logger.stamped(chain).contains(last))
        logger.daemon.stop()
        try tsa.start()
        try logger.daemon.start()
        // Stamped soon after the start: no advance, no interval waited.
        #expect(
            eventually(timeout: 15) { logger.stamped(chain).contains(last) },
            "tokens \(logger.stamped(chain)), head \(last); \(logger.lastError()); \(logger.daemon.log.suffix(1500))")
        #expect(logger.signedEntries(chain) == last, "the chain did not advance: nothing else stamped it")
        let entries = try logger.entries(chain)
        let verified = try runTool(
            "openssl",
            [
                "ts", "-verify", "-digest", entries[last - 1].hash.hex, "-in",
                logger.archive + "/" + chain + ".\(last).tsr", "-CAfile", tsa.roots,
            ])
        #expect(verified.stdout.contains("Verification: OK"), "\(verified.stdout) \(verified.stderr)")
        #expect(eventually(timeout: 5) { (try? logger.timeStamps())??["backlog"]?.intValue == 0 })
    }
}
