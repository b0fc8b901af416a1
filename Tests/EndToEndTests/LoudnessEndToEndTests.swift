// Loudness end to end: recd-signal plays EBU Tech 3341 case 1 (a stereo 1 kHz sine at -23 dBFS
// per channel) into a real recd; the segment's comments, `archive list` and `meter` read it.

import ControlProtocol
import Foundation
import Platform
import TestSupport
import Testing

@Suite("loudness of recordings end to end", .serialized)
struct LoudnessEndToEndTests {
    @Test("a -23 dBFS stereo sine reads -23.0 ± 0.1 LUFS in meter, the segment's tags and archive list")
    func sineLoudness() throws {
        let deck = uniqueName("deck")
        let daemon = try Daemon(ports: ArchiveEndToEndTests.deckPorts(deck))
        let (source, _) = try startLoggerRecording(daemon, deck: deck, level: -23)
        // Short-term loudness needs 3 s of the segment.
        var live: (JSONValue?, JSONValue?) = (nil, nil)
        #expect(
            try eventually(timeout: 10) {
                let reply = try daemon.recctl("--json", "meter", "logger", "--once").json
                let recording = reply?["recordings"]?.arrayValue?.first
                live = (recording?["momentaryLufs"], recording?["shortTermLufs"])
                return live.1?.doubleValue != nil
            })
        // The start-up log names the sample walks' build this CPU runs.
        let build = Processor.runsX86_64v3 ? "x86-64-v3 (AVX2)" : "baseline"
        #expect(daemon.log.contains("sample walks (quantizing, loudness, silence, levels): the \(build)"), "\(daemon.log)")
        let momentary = try #require(live.0?.doubleValue)
        let shortTerm = try #require(live.1?.doubleValue)
        #expect(abs(momentary - -23) <= 0.1 && abs(shortTerm - -23) <= 0.1, "M \(momentary) S \(shortTerm)")
        let legacy = try RawClient(path: daemon.socket)
        func askVersion1(_ id: Int, _ body: String) throws -> JSONValue {
            legacy.send(#"{"id":\#(id),"# + body.dropFirst() + "\n")
            while true {
                let line = try #require(legacy.readJSON(), "no reply to \(body)")
                if line["id"]?.intValue == id { return line }
            }
        }
        let oldMeter = try askVersion1(1, #"{"op":"meter","app":"logger"}"#)
        #expect(oldMeter["recordings"]?.arrayValue?.first?["short_term_lufs"]?.doubleValue != nil, "\(oldMeter)")
        let human = try daemon.recctl("meter", "logger", "--once")
        #expect(human.stdout.contains("logger/mic: momentary  -23.0 LUFS"), "\(human.stdout)")
        try #require(daemon.recctl("record", "stop", "logger").status == 0)
        source.stop()

        let listed = try #require(daemon.recctl("--json", "archive", "list", "--app", "logger").json?.arrayValue)
        let segment = try #require(listed.first)
        let path = try #require(segment["path"]?.stringValue)
        let lufs = try #require(segment["loudnessLufs"]?.doubleValue, "\(segment)")
        #expect(abs(lufs - -23) <= 0.1, "archive list: \(lufs) LUFS")
        #expect(try #require(segment["loudnessRangeLu"]?.doubleValue) <= 0.5)
        let peak = try #require(segment["truePeakDbtp"]?.doubleValue)
        #expect(abs(peak - -23) <= 0.1, "\(peak) dBTP")
        let tag = try #require(try metaflacTag(path, "LOUDNESS_LUFS").flatMap { Double($0) })
        #expect(tag == lufs)
        #expect(try metaflacTag(path, "TRUE_PEAK_DBTP").flatMap { Double($0) } == peak)
        let oldList = try askVersion1(2, #"{"op":"archive.list","app":"logger"}"#)
        let oldSegment = try #require(oldList["segments"]?.arrayValue?.first)
        #expect(oldSegment["loudness_lufs"]?.doubleValue == lufs && oldSegment["loudnessLufs"] == nil)
        #expect(oldSegment["true_peak_dbtp"]?.doubleValue == peak && oldSegment["loudness_range_lu"] != nil)
    }
}
