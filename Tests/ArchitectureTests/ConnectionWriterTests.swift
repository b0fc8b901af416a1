// One writer of recd's JACK connections (docs/architecture.md, "One writer of JACK
// connections"): the connection reconciler's worker. libjack's jack_connect and jack_disconnect
// are called in one place, the C seam (`JackClient`, one Swift function per C call), and that
// seam's `connect`/`disconnect` only by the worker (`Internals/ConnectionWorker.swift`), whose
// passes apply the reconciler's rules and its churn rule. A player move or an attach asks the
// worker (`ConnectionWorker.request`) instead of connecting on the control thread.
import Foundation
import TestSupport
import Testing

enum ConnectionWriters {
    /// JACK applications of their own, not recd: the tests' oracle and the example apps.
    static let otherClients: Set<String> = ["recd-signal", "audiosession-tone", "audiosession-record"]
    static let seam = "AudioEngine/JackClient.swift"
    static let writer = "AudioEngine/Internals/ConnectionWorker.swift"

    /// recd's Swift sources, by path under Sources/, with their text.
    static func files() throws -> [(path: String, text: String)] {
        let sources = ModuleMap.root + "/Sources"
        var files: [(path: String, text: String)] = []
        for module in try FileManager.default.contentsOfDirectory(atPath: sources).sorted()
        where !otherClients.contains(module) {
            guard let walker = FileManager.default.enumerator(atPath: sources + "/" + module) else { continue }
            for case let path as String in walker where path.hasSuffix(".swift") {
                let full = module + "/" + path
                files.append((full, try String(contentsOfFile: sources + "/" + full, encoding: .utf8)))
            }
        }
        return files
    }

    /// The lines of `text` that call one of `calls` (comments left out).
    static func callers(of calls: [String], in text: String) -> [String] {
        text.split(separator: "\n").map { line in
            line.range(of: "//").map { String(line[..<$0.lowerBound]) } ?? String(line)
        }.filter { code in calls.contains { code.contains($0) } }
    }
}

@Suite("one writer of JACK connections")
struct ConnectionWriterTests {
    @Test(
        "jack_connect and jack_disconnect are called only in the C seam, and the seam's connect and disconnect only by the reconciler's worker"
    )
    func oneWriter() throws {
        let files = try ConnectionWriters.files()
        #expect(files.count > 100, "the scan found \(files.count) files")
        #expect(
            files.contains { $0.path == ConnectionWriters.writer }
                && files.contains { $0.path == ConnectionWriters.seam })
        for file in files where file.path != ConnectionWriters.seam {
            let calls = ConnectionWriters.callers(of: ["jack_connect(", "jack_disconnect("], in: file.text)
            #expect(calls.isEmpty, "\(file.path) calls libjack's connection calls: \(calls)")
        }
        for file in files where file.path != ConnectionWriters.writer {
            let calls = ConnectionWriters.callers(of: [".connect(source:", ".disconnect(source:"], in: file.text)
            #expect(calls.isEmpty, "\(file.path) connects or disconnects JACK ports past the reconciler: \(calls)")
        }
        let writes = ConnectionWriters.callers(
            of: [".connect(source:", ".disconnect(source:"],
            in: try #require(
                files.first { $0.path == ConnectionWriters.writer }?.text))
        #expect(writes.count == 2, "the worker's pass connects and disconnects: \(writes)")
    }

    @Test("the scan has teeth: a connection made on the control thread is seen, a comment is not")
    func scanBites() {
        let text = """
            // connectNow used to call client.connect(source: a, destination: b) here
            for edge in edges { _ = try? connection.client.connect(source: edge.source, destination: edge.destination) }
            let result = jack_disconnect(client, source, destination)
            """
        #expect(ConnectionWriters.callers(of: [".connect(source:"], in: text).count == 1)
        #expect(ConnectionWriters.callers(of: ["jack_disconnect("], in: text).count == 1)
    }
}
