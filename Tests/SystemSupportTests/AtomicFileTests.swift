import Foundation
import Glibc
import Platform
import Testing

@testable import SystemSupport

@Suite("AtomicFile")
struct AtomicFileTests {
    private func leftovers(in directory: String, for path: String) throws -> [String] {
        let prefix = AtomicFile.temporaryPrefix(for: path).split(separator: "/").last.map(String.init)!
        return try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix(prefix) }
    }

    @Test("write then read round-trips, with the exact mode and no temporary file left")
    func roundTrip() throws {
        let directory = makeTemporaryDirectory()
        defer { removeTree(directory) }
        let path = directory + "/sessions.json"
        #expect(try AtomicFile.read(path) == nil)

        let first = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try AtomicFile.write(first, to: path)
        #expect(try AtomicFile.read(path) == first)
        var status = stat()
        #expect(stat(path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o640)

        try AtomicFile.write(#"{"v":2}"#, to: path, mode: 0o600)
        #expect(try AtomicFile.read(path) == Array(#"{"v":2}"#.utf8))
        #expect(stat(path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600)

        try AtomicFile.write([], to: path)
        #expect(try AtomicFile.read(path) == [])
        #expect(try leftovers(in: directory, for: path).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["sessions.json"])
    }

    @Test("a failed write throws a SystemError naming the path and the cause")
    func failure() throws {
        let directory = makeTemporaryDirectory()
        defer { removeTree(directory) }
        let path = directory + "/missing/state.json"
        do {
            try AtomicFile.write([1, 2, 3], to: path)
            Issue.record("writing into a missing directory succeeded")
        } catch {
            #expect(error.errno == .noSuchFileOrDirectory)
            #expect(error.description.contains(directory + "/missing/"))
            #expect(error.description.contains("No such file or directory"))
        }
        // Renaming onto a directory fails after the temporary file exists: it must go away.
        try #require(mkdir(directory + "/occupied", 0o755) == 0)
        try #require(mkdir(directory + "/occupied/inner", 0o755) == 0)
        #expect(throws: SystemError.self) { try AtomicFile.write([1], to: directory + "/occupied") }
        #expect(try leftovers(in: directory, for: directory + "/occupied").isEmpty)
    }

    @Test("SystemError descriptions carry strerror text")
    func systemErrorDescription() {
        let error = SystemError(errno: EACCES, operation: "open", path: "/var/lib/recd/x")
        #expect(error.description == "open /var/lib/recd/x: Permission denied (errno 13)")
        #expect(SystemError(errno: EPIPE, operation: "send").description == "send: Broken pipe (errno 32)")
    }
}
