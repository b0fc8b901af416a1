// The numbers recctl writes for people, from a real recd: durations with a unit and at most three
// significant digits, counts whose noun agrees, positions as times with their frames in
// brackets (Platform's `Readable`); `archive export` without `--to` ends now. JSON keeps recd's
// exact numbers.
import ControlProtocol
import Foundation
import TestSupport
import Testing

@Suite("numbers in recctl's words", .serialized)
struct ReadableOutputTests {
    /// `text` without its ISO 8601 times and paths, which carry fractions of their own.
    static func words(_ text: String) -> String {
        text.replacingOccurrences(of: #"\d{4}-\d\d-\d\dT[0-9:.]+Z"#, with: "TIME", options: .regularExpression)
            .replacingOccurrences(of: #"/[^ ,;()]+"#, with: "PATH", options: .regularExpression)
    }

    /// A raw machine float in words: four or more decimals.
    static func rawFloats(_ text: String) -> [String] {
        let words = Self.words(text)
        guard let expression = try? NSRegularExpression(pattern: #"\d+\.\d{4,}"#) else { return ["?"] }
        return expression.matches(in: words, range: NSRange(words.startIndex..., in: words)).compactMap {
            Range($0.range, in: words).map { String(words[$0]) }
        }
    }

    @Test(
        "status, export (no --to: until now; its silent gap as a time with frames), prove (1 chain) and watch's silence and finished lines write numbers as a person does"
    )
    func numbersInWords() throws {
        let daemon = try Daemon(
            extraConfig: """

                [session logger]
                category = record
                mic_usage = archive
                permission = granted
                silence_seconds = 1

                """)
        let words = try daemon.watchInWords("logger")
        let started = Date()
        try #require(daemon.recctl("record", "start", "logger").status == 0)
        #expect(
            try eventually(timeout: 10) { words.texts.contains { $0.contains("SILENCE on mic") } }, "\(words.texts)")

        let status = try daemon.recctl("status")
        try #require(status.status == 0, "\(status.stderr)")
        #expect(Self.rawFloats(status.stdout).isEmpty, "\(status.stdout)")
        #expect(status.stdout.contains(" 0 xruns") || status.stdout.contains("xruns not reported"), "\(status.stdout)")
        #expect(status.stdout.range(of: #"up \d+(\.\d+)? (ms|s|min)"#, options: .regularExpression) != nil)
        #expect(status.stdout.contains(" 0 segments"), "\(status.stdout)")

        // 30 s before now: the recording began a few seconds ago, so the clip begins silent.
        let clip = daemon.directory + "/clip.wav"
        let export = try daemon.recctl("archive", "export", "--app", "logger", "--from", "now-30s", "--output", clip)
        try #require(export.status == 0, "\(export.stderr)")
        let line = export.stdout
        #expect(Self.rawFloats(line).isEmpty, "\(line)")
        #expect(line.contains(" at 48000 Hz, 2 channels, from 1 segment;"), "\(line)")
        #expect(
            line.range(of: #"; silent gap at 0\.00 s \[0\] for \d+(\.\d+)? s \[\d+\]"#, options: .regularExpression)
                != nil, "\(line)")
        // Until now: the open segment's last complete frame, a little before recctl's now.
        #expect(line.contains("not "), "\(line)")
        let json = try daemon.recctl(
            "--json", "archive", "export", "--app", "logger", "--from", "now-30s", "--output",
            daemon.directory + "/clip2.wav")
        #expect(json.json?["gaps"]?.stringValue?.range(of: #"^0\+\d+$"#, options: .regularExpression) != nil)
        #expect(Date().timeIntervalSince(started) < 60)

        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        #expect(
            try eventually(timeout: 10) {
                words.texts.contains { $0.hasPrefix("logger: recording mic finished ") && $0.hasSuffix("(stop)") }
            }, "\(words.texts)")
        let silence = try #require(words.texts.first { $0.contains("SILENCE on mic") })
        #expect(Self.rawFloats(silence).isEmpty && silence.contains(" s, peak "), "\(silence)")

        // The prover chains the finished segment on its thread: one stream, one day, one chain.
        var proof = CommandResult(status: -1, stdout: "", stderr: "")
        #expect(
            try eventually(timeout: 10) {
                proof = try daemon.recctl("archive", "prove", "--dir", daemon.directory + "/archive")
                return proof.status == 0
            }, "\(proof.stdout)\(proof.stderr)")
        #expect(proof.stdout.contains("holds: 1 segment proven in 1 chain (1 signed throughout)"), "\(proof.stdout)")
    }
}
