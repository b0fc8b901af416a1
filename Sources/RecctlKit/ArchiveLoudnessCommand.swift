// `recctl archive loudness FEED --date D | --from T [--to T] [--target LUFS] [--tolerance LU]
// [--csv]`: the loudness report of a day (UTC, as the page's) or a range. recd exports the
// stretch (`archive.export`, with the caller's rights, into a file recctl opened and unlinked
// at once), and recctl measures it with `LoudnessReportBuilder` (Codec): the code and the
// samples `/api/loudness` measures, so both print the same numbers.
// Threads: the main thread.
import Codec
import ControlClient
import ControlProtocol
import Foundation
import Platform

#if canImport(Glibc)
    import Glibc
#endif

enum ArchiveLoudnessCommand {
    static func run(_ command: ParsedCommand, globals: GlobalOptions, environment: [String: String]) -> Int32 {
        let usage = command.spec.usage
        guard let feed = command.positionals.first, !feed.isEmpty else {
            return Recctl.usageFailure(UsageError(message: "archive loudness needs FEED (APP/STREAM)", usage: usage))
        }
        let parts = feed.split(separator: "/", maxSplits: 1).map(String.init)
        let now = Date()
        var from: String
        var to: String
        var target = -23.0
        var tolerance = 1.0
        do {
            if let date = command.value("date") {
                guard command.value("from") == nil, command.value("to") == nil else {
                    throw UsageError(message: "give --date, or --from and --to, not both", usage: usage)
                }
                let utc = TimeZone(identifier: "UTC") ?? .current
                guard date.utf8.count == 10, let day = try? TimeForms.resolve(date, now: now, timeZone: utc),
                    let start = ISO8601DateFormatter().date(from: day)
                else {
                    throw UsageError(
                        message: "--date \"\(date)\" is no day; write YYYY-MM-DD (a UTC day)", usage: usage)
                }
                from = day
                to = TimeForms.wire(min(start.addingTimeInterval(86_400), now))
            } else if let text = command.value("from") {
                let zone = TimeZone.current
                from = try TimeArgument.resolve(text, flag: "from", now: now, timeZone: zone)
                to = try TimeArgument.resolve(command.value("to") ?? "now", flag: "to", now: now, timeZone: zone)
            } else {
                throw UsageError(message: "archive loudness needs --date D, or --from T (and --to T)", usage: usage)
            }
            if let text = command.value("target") {
                guard let value = Double(text), (-60.0...0.0).contains(value) else {
                    throw UsageError(message: "--target \(text): give LUFS from -60 to 0, e.g. -23", usage: usage)
                }
                target = value
            }
            if let text = command.value("tolerance") {
                guard let value = Double(text), (0.0...20.0).contains(value) else {
                    throw UsageError(message: "--tolerance \(text): give LU from 0 to 20, e.g. 1", usage: usage)
                }
                tolerance = value
            }
        } catch let error as UsageError {
            return Recctl.usageFailure(error)
        } catch {
            return 2
        }
        // recd writes the clip into a file only recctl can reach: made here, unlinked at once.
        let directory = environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        let path = directory + "/recctl-loudness-" + String(UInt64.random(in: 0...UInt64.max), radix: 36) + ".flac"
        let file: OwnedFile
        do {
            file = try OwnedFile(path, .createExclusive(permissions: 0o600))
            try FileSystem.remove(path)
        } catch {
            printError("error: cannot make a file for the clip in \(directory): \(error.message); set TMPDIR\n")
            return 1
        }
        let stream = parts.count > 1 ? parts[1] : nil
        let reply: JSONValue
        do {
            let connection = try Connection(
                candidates: ControlSocket.candidates(globals.socket, environment: environment), interface: .recctl)
            // The report starts at the first finished segment in the range, as /api/loudness's
            // does (not in hours of silence before it).
            let listed = try connection.call(.archiveList(app: parts[0], since: from))
            let first = (listed["segments"]?.arrayValue ?? []).first {
                $0["state"]?.stringValue == "finished" && ($0["group"]?.intValue ?? 0) == 0
                    && (stream == nil || $0["stream"]?.stringValue == stream)
            }
            if let start = first?["start"]?.stringValue, let startDate = Self.date(start),
                let fromDate = Self.date(from), let toDate = Self.date(to), startDate > fromDate, startDate < toDate
            {
                from = start
            }
            let request = Command.archiveExport(
                ExportRequest(app: parts[0], stream: stream, from: from, to: to, format: "flac", file: path))
            reply = try connection.call(request, passing: [file.descriptor], timeout: nil)
        } catch let error as Unreachable {
            printError(
                "error: cannot reach recd (looked at \(error.tried.joined(separator: ", "))): \(error.reason); is recd "
                    + "running? or pass --socket PATH\n")
            return 3
        } catch {
            printError("error: \(error)\n")
            return 3
        }
        if let error = Wire.error(from: reply), reply["ok"]?.boolValue != true {
            Output(json: globals.json).failure(error)
            return 1
        }
        let report: LoudnessReport
        do throws(MediaError) {
            let reader = try AudioFileReader(file: ReadOnlyFile(adopting: file.relinquish(), name: path))
            report = try LoudnessReportBuilder.measure(reader, target: target, tolerance: tolerance)
        } catch {
            printError("error: cannot measure the clip: \(error.message)\n")
            return 1
        }
        let start = reply["start"]?.stringValue ?? from
        let startDate = ISO8601DateFormatter.withFraction.date(from: start) ?? ISO8601DateFormatter().date(from: start)
        if command.has("csv") {
            print(
                report.csv(feed: feed, start: start) { index in
                    startDate.map { TimeForms.wire($0.addingTimeInterval(Double(index + 1)), microseconds: false) }
                        ?? String(index + 1)
                }, terminator: "")
            return 0
        }
        func number(_ value: Double?) -> JSONValue {
            value.flatMap { Double(LoudnessReport.fixed($0)) }.map { .number($0) } ?? .null
        }
        if globals.json {
            let json: JSONValue = [
                "feed": .string(feed), "from": .string(start), "seconds": number(report.seconds),
                "integratedLUFS": number(report.summary.integratedLUFS), "rangeLU": number(report.summary.rangeLU),
                "truePeakDBTP": number(report.summary.truePeakDBTP), "targetLUFS": number(report.target),
                "toleranceLU": number(report.tolerance), "secondsAbove": .number(Double(report.secondsAbove)),
                "shortTermLUFS": .array(report.shortTerm.map { number($0) }),
            ]
            print(json.jsonText)
            return 0
        }
        func shown(_ value: Double?, _ unit: String) -> String {
            value.map { LoudnessReport.fixed($0) + " " + unit } ?? "none (silence)"
        }
        print("\(feed) from \(start), \(Readable.duration(report.seconds))")
        print("integrated loudness  \(shown(report.summary.integratedLUFS, "LUFS"))")
        print("loudness range       \(shown(report.summary.rangeLU, "LU"))")
        print("maximum true peak    \(shown(report.summary.truePeakDBTP, "dBTP"))")
        print(
            "above target         \(Readable.duration(Double(report.secondsAbove))) (short-term above "
                + "\(LoudnessReport.fixed(target)) LUFS + \(LoudnessReport.fixed(tolerance)) LU)")
        return 0
    }
}

extension ArchiveLoudnessCommand {
    /// recd's wire times, with or without a fraction.
    static func date(_ text: String) -> Date? {
        ISO8601DateFormatter.withFraction.date(from: text) ?? ISO8601DateFormatter().date(from: text)
    }
}

extension ISO8601DateFormatter {
    fileprivate static var withFraction: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}
