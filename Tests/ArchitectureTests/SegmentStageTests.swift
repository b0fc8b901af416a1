// The archive's segment stages (docs/architecture.md, the Archive row): each stage in a file of
// its own under Sources/Archive/Stages, listed once in `SegmentStages.all`, named nowhere else;
// the archiver's loop small; no identity wrappers (a configuration of plain values).
import Foundation
import TestSupport
import Testing

enum ArchiveSources {
    static let directory = ModuleMap.root + "/Sources/Archive"

    /// Every Swift file of the Archive module (its folders too), by path below it, with its text.
    static func files() throws -> [(path: String, text: String)] {
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return [] }
        return try walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }.sorted().map {
            ($0, try String(contentsOfFile: directory + "/" + $0, encoding: .utf8))
        }
    }

    /// The names `pattern`'s first group matches in `text`.
    static func matches(_ pattern: String, in text: String) throws -> [String] {
        let regex = try NSRegularExpression(pattern: pattern)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map {
            String(text[Range($0.range(at: 1), in: text)!])
        }
    }
}

@Suite("segment stages: one file and one line each, named by nobody else")
struct SegmentStageTests {
    @Test("every stage is in Stages/ in a file of its name, listed once in SegmentStages.all, named in no other file")
    func stagesStayApart() throws {
        let files = try ArchiveSources.files()
        var stages: [String: String] = [:]
        for file in files {
            for name in try ArchiveSources.matches(#"(?:class|struct)\s+(\w+)\s*:\s*SegmentStage\b"#, in: file.text) {
                stages[name] = file.path
            }
        }
        #expect(stages.count >= 6, "the scan found \(stages.keys.sorted())")
        let list = try #require(files.first { $0.path == "Stages/SegmentStages.swift" }).text
        for (name, path) in stages {
            #expect(path == "Stages/\(name).swift", "\(name) is declared in \(path)")
            #expect(try ArchiveSources.matches(#"\b("# + name + #")\.self,"#, in: list).count == 1, "\(name)")
            var namers: [String] = []
            for file in files where file.path != path && file.path != "Stages/SegmentStages.swift" {
                if try !ArchiveSources.matches(#"\b("# + name + #")\b"#, in: file.text).isEmpty {
                    namers.append(file.path)
                }
            }
            #expect(namers.isEmpty, "\(name) is named in \(namers)")
        }
    }

    @Test("the archiver's loop is at most 350 lines with at most 15 stored properties")
    func smallLoop() throws {
        let text = try #require(try ArchiveSources.files().first { $0.path == "Internals/ArchiverLoop.swift" }).text
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count
        #expect(lines <= 350, "ArchiverLoop.swift has \(lines) lines")
        let properties = try ArchiveSources.matches(
            #"(?m)^    (?:private(?:\(set\))? |fileprivate )?(let|var) "#, in: text)
        #expect(properties.count <= 15, "ArchiverLoop has \(properties.count) stored properties")
        #expect(properties.count >= 3, "the scan found \(properties.count)")
    }

    @Test("no identity wrappers in Archive: no value is equal by the identity of an object it holds")
    func noIdentityWrappers() throws {
        for file in try ArchiveSources.files() {
            #expect(!file.text.contains("ObjectIdentifier("), "\(file.path)")
            #expect(!file.text.contains(" === "), "\(file.path)")
        }
    }
}
