// The recorder service keeps recorders, taps and recovery; what reacts to segments hears them
// through `SegmentFeature` (docs/architecture.md, "Segment features"). These scans keep it so:
// a small service, all in its own file, naming no feature; one writer of the take trigger's state.
import Foundation
import TestSupport
import Testing

enum StoredProperties {
    /// The stored properties of the class `name` declared in `text`: members at the class's
    /// own indentation declared with `let`, or with `var` and either an initial value or no
    /// body (a computed `var x: T { ... }` is not stored).
    static func of(_ name: String, in text: String) -> [String] {
        guard let start = text.range(of: "final class \(name)") else { return [] }
        var names: [String] = []
        let declaration = try! NSRegularExpression(
            pattern: #"^    (?:(?:private\(set\)|private|fileprivate|weak|unowned|lazy|nonisolated)\s+)*"#
                + #"(let|var)\s+([A-Za-z_][A-Za-z0-9_]*)(.*)$"#)
        for line in text[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("}") { break }
            let line = String(line)
            guard
                let match = declaration.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)),
                let kind = Range(match.range(at: 1), in: line), let member = Range(match.range(at: 2), in: line),
                let rest = Range(match.range(at: 3), in: line)
            else { continue }
            let tail = line[rest]
            let computed = line[kind] == "var" && !tail.contains(" = ") && tail.contains("{")
            if !computed { names.append(String(line[member])) }
        }
        return names
    }
}

@Suite("segment features: a small recorder service, one writer of the take trigger's state")
struct SegmentFeatureShapeTests {
    static func text(_ file: String) throws -> String {
        try String(contentsOfFile: DaemonSources.directory + "/" + file, encoding: .utf8)
    }

    @Test("RecorderService has at most 12 stored properties, all in RecorderService.swift, and no extension elsewhere")
    func smallRecorderService() throws {
        let stored = StoredProperties.of("RecorderService", in: try Self.text("RecorderService.swift"))
        #expect(stored.count >= 8, "the scan found \(stored)")
        #expect(stored.count <= 12, "RecorderService stores \(stored.count): \(stored)")
        let extending = try DaemonSources.files().filter { $0.text.contains("extension RecorderService") }.map(\.name)
        #expect(extending.isEmpty, "RecorderService is extended in \(extending)")
    }

    @Test("the scan has teeth: a stored property is counted, a computed one is not")
    func storedScanBites() {
        let text = """
            final class RecorderService {
                let a: Int
                private(set) var b: [Int] = [] {
                    didSet { print(b) }
                }
                weak var c: AnyObject?
                var d: Int { a + 1 }
                var e: String {
                    "e"
                }
                func f() { let g = 1 }
            }
            """
        #expect(StoredProperties.of("RecorderService", in: text) == ["a", "b", "c"])
    }

    @Test("RecorderService names no feature: segment and stream facts go through SegmentFeature")
    func featuresUnnamed() throws {
        let text = try Self.text("RecorderService.swift")
        for feature in [
            "SilenceAlarms", "SegmentProver", "ReplicationService", "ArchiveService", "ArchiveRetention",
            "TakeTriggerFeature", "TimeSourceMonitor", "PreRollKeeper(",
        ] {
            #expect(!text.contains(feature), "RecorderService.swift names \(feature)")
        }
        #expect(text.contains("feature.segmentFinished("), "the scan found no segment fact handed out")
    }

    @Test("the pre-roll taps and the armed triggers have one writer: TakeTriggerFeature")
    func oneWriterOfTakes() throws {
        let writers = try DaemonSources.files().filter { file in
            file.text.contains("preRolls.") || file.text.contains("armed[")
        }.map(\.name)
        #expect(writers == ["TakeTriggerFeature.swift"], "pre-roll or trigger state is touched in \(writers)")
    }
}
