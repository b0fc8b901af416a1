// recctl's times (--since, --from, --to) from a table: each form a person types, resolved on a
// fixed clock in a fixed zone, against the UTC instant recd must get. Europe/Berlin on the day
// its clocks go forward (2026-03-29, 02:00 CET → 03:00 CEST), so the offset differs within the
// table and a skipped hour exists.
@testable import RecctlKit
import ControlProtocol
import Foundation
import Testing

@Suite("recctl: times as a person types them, resolved to UTC")
struct RecctlTimeTests {
    /// 2026-03-29T10:00:00Z, noon in Berlin (CEST).
    static let now = Date(timeIntervalSince1970: 1_774_778_400)
    static let berlin = TimeZone(identifier: "Europe/Berlin")!

    static let resolved: [(typed: String, utc: String)] = [
        ("now", "2026-03-29T10:00:00Z"),
        ("-30s", "2026-03-29T09:59:30Z"),
        ("now-30s", "2026-03-29T09:59:30Z"),
        ("now-1.5m", "2026-03-29T09:58:30Z"),
        ("-1h", "2026-03-29T09:00:00Z"),
        ("-2d", "2026-03-27T10:00:00Z"),
        ("-0.25s", "2026-03-29T09:59:59.750000Z"),
        ("today", "2026-03-28T23:00:00Z"),  // midnight CET (+01:00)
        ("yesterday", "2026-03-27T23:00:00Z"),
        ("09:15", "2026-03-29T07:15:00Z"),  // CEST (+02:00), after the change
        ("01:30:15", "2026-03-29T00:30:15Z"),  // CET, before it
        ("2026-07-01", "2026-06-30T22:00:00Z"),
        ("2026-12-24T18:00", "2026-12-24T17:00:00Z"),
        ("2026-12-24 18:00:05.25", "2026-12-24T17:00:05.250000Z"),
        ("2026-12-24t18:00:05", "2026-12-24T17:00:05Z"),
        // With a zone: recd's own form, passed on as typed.
        ("2026-12-02T10:42:03Z", "2026-12-02T10:42:03Z"),
        ("2026-12-02T11:42:03.5+01:00", "2026-12-02T11:42:03.5+01:00"),
        ("2026-12-02T05:42:03-0500", "2026-12-02T05:42:03-0500"),
    ]

    @Test("every form resolves to the UTC instant it means", arguments: resolved)
    func resolves(typed: String, utc: String) throws {
        #expect(try TimeArgument.resolve(typed, flag: "since", now: Self.now, timeZone: Self.berlin) == utc)
    }

    static let refused: [(typed: String, says: String)] = [
        ("02:30", "skipped"),  // the hour Berlin's clocks skip that day
        ("2026-02-30", "no such day"),
        ("25:00", "is not a time"),
        ("12:3", "is not a time"),
        ("2026-1-05", "is not a time"),
        ("tomorrow", "is not a time"),
        ("-5x", "is not a time"),
        ("-", "is not a time"),
        ("now-", "is not a time"),
        ("-1e400s", "is not a time"),
        ("--1h", "is not a time"),
        ("12:30:00.5.5", "is not a time"),
        ("-4000d", "more than ten years"),
        ("", "is not a time"),
    ]

    @Test("anything else is a usage error naming the flag and the forms", arguments: refused)
    func refuses(typed: String, says: String) {
        do {
            let wire = try TimeArgument.resolve(typed, flag: "from", now: Self.now, timeZone: Self.berlin)
            Issue.record("\"\(typed)\" resolved to \(wire)")
        } catch {
            #expect(error.message.hasPrefix("--from \""), "\(error.message)")
            #expect(error.message.contains(says), "\(error.message)")
            #expect(error.message.contains("today") || error.message.contains("date instead"), "\(error.message)")
        }
    }

    @Test("in UTC, today is the UTC midnight")
    func utcZone() throws {
        let utc = try #require(TimeZone(identifier: "UTC"))
        for typed in ["today", "2026-03-29"] {
            #expect(try TimeArgument.resolve(typed, flag: "since", now: Self.now, timeZone: utc) == "2026-03-29T00:00:00Z")
        }
    }

    @Test("archive list and archive export send recd the resolved times; the help lists the forms")
    func requests() throws {
        let list = try ArgumentParser.parse(["archive", "list", "--since", "yesterday"], commands: Recctl.commands)
        let listRequest = try Recctl.buildRequest(list, now: Self.now, timeZone: Self.berlin)
        guard case .archiveList(_, let since, _, _) = listRequest else {
            Issue.record("not an archive.list")
            return
        }
        #expect(since == "2026-03-27T23:00:00Z")
        let export = try ArgumentParser.parse(
            ["archive", "export", "--app", "logger", "--from", "-30s", "--to", "now", "-o", "clip.wav"],
            commands: Recctl.commands)
        guard case .archiveExport(let request) = try Recctl.buildRequest(export, now: Self.now, timeZone: Self.berlin)
        else {
            Issue.record("not an archive.export")
            return
        }
        #expect(request.from == "2026-03-29T09:59:30Z" && request.to == "2026-03-29T10:00:00Z")
        // Without --to: until now.
        let untilNow = try ArgumentParser.parse(
            ["archive", "export", "--app", "logger", "--from", "-30s", "-o", "clip.wav"], commands: Recctl.commands)
        guard case .archiveExport(let open) = try Recctl.buildRequest(untilNow, now: Self.now, timeZone: Self.berlin)
        else {
            Issue.record("not an archive.export")
            return
        }
        #expect(open.to == "2026-03-29T10:00:00Z")
        #expect(throws: UsageError.self) {
            _ = try Recctl.buildRequest(
                try ArgumentParser.parse(
                    ["archive", "export", "--app", "a", "--from", "soon", "--to", "now", "-o", "c.wav"],
                    commands: Recctl.commands), now: Self.now, timeZone: Self.berlin)
        }
        for path in [["archive", "list"], ["archive", "export"]] {
            let help = try #require(Recctl.commands.first { $0.path == path }).help
            for form in ["today", "yesterday", "-1h", "-30s", "now", "HH:MM[:SS]", "ISO", "8601"] {
                #expect(help.contains(form), "\(path.joined(separator: " ")) help lacks \(form):\n\(help)")
            }
            #expect(help.split(separator: "\n").allSatisfy { $0.count <= HelpText.width })
        }
    }
}
