// A C developer's first commands, run exactly as the documents print them: README.md's and
// docs/audiosession.md's ```sh blocks that build a program with audiosession's pkg-config flags,
// for the source tree (after swift build) and for the installed layout staged with
// scripts/install --destdir. Each block runs whole in bash from the package root; its last line
// starts the example, which must reach a real recd (on the test's jackd) and activate.
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

enum DocumentedCommands {
    /// The documents a C developer reads first.
    static let documents = ["README.md", "docs/audiosession.md"]

    /// The ```sh blocks of the documents that build against audiosession's pkg-config flags.
    static func buildBlocks() throws -> [(document: String, block: String)] {
        try documents.flatMap { path in
            let text = try String(contentsOfFile: ExternalTools.packageRoot + "/" + path, encoding: .utf8)
            return DocumentCode.blocks("sh", in: text).filter { $0.contains("pkg-config --cflags --libs audiosession") }
                .map { (path, $0) }
        }
    }

    /// How a block is run: the source tree's, the staged install's, or one this test does not
    /// run (the Debian packages' install, run by scripts/package-test; a template with app.c).
    enum Kind { case sourceTree, staged, notRunHere }

    static func kind(of block: String) -> Kind {
        if block.contains("scripts/install --bin") { return .staged }
        if block.contains("scripts/audiosession-pc") { return .sourceTree }
        return .notRunHere
    }
}

/// A documented block running in bash (its last line is the example, which runs until stopped).
final class DocumentedBlock: @unchecked Sendable {
    let process: Process
    let outputPath: String

    init(_ block: String, environment: [String: String], outputPath: String) throws {
        self.outputPath = outputPath
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        // -e: a failing build line stops the block, as a reader would stop.
        process = try ExternalTools.process("bash", ["-e", "-c", block])
        process.currentDirectoryURL = URL(fileURLWithPath: ExternalTools.packageRoot)
        process.environment = ExternalTools.environment(environment)
        process.standardOutput = out
        process.standardError = out
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try out.close()
    }

    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    /// Ends the example and bash. SIGKILL: bash runs the block's last line by exec, and the
    /// example inherits a signal mask with SIGTERM blocked from the thread that started bash.
    func stop() {
        _ = try? runTool("pkill", ["-KILL", "-P", "\(process.processIdentifier)"])
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

@Suite("the documented C build commands run as printed", .serialized)
struct DocumentedCommandsTests {
    @Test("no document sets PKG_CONFIG_PATH in front of cc (it would reach cc, not the pkg-config inside $(...))")
    func variableReachesPkgConfig() throws {
        var lines = 0
        for path in ["README.md"]
            + (try FileManager.default.contentsOfDirectory(atPath: ExternalTools.packageRoot + "/docs"))
            .filter({ $0.hasSuffix(".md") }).map({ "docs/" + $0 })
        {
            let text = try String(contentsOfFile: ExternalTools.packageRoot + "/" + path, encoding: .utf8)
            for line in text.split(separator: "\n") where line.contains("pkg-config") {
                lines += 1
                #expect(
                    line.range(of: #"PKG_CONFIG_[A-Z_]+=\S+\s+(\S+=\S+\s+)*cc\s"#, options: .regularExpression) == nil,
                    "\(path): \(line)")
            }
        }
        #expect(lines >= 4)
        let kinds = try DocumentedCommands.buildBlocks().map { DocumentedCommands.kind(of: $0.block) }
        #expect(
            kinds.filter { $0 == .sourceTree }.count == 2, "README.md's and docs/audiosession.md's source-tree blocks")
        #expect(kinds.contains(.staged), "docs/audiosession.md's staged-install block")
    }

    /// Runs every block of `kind` as printed, then checks that its example reached recd.
    private func run(_ kind: DocumentedCommands.Kind) throws {
        let blocks = try DocumentedCommands.buildBlocks().filter { DocumentedCommands.kind(of: $0.block) == kind }
        try #require(!blocks.isEmpty)
        let root = ExternalTools.packageRoot
        // The blocks write ./tone in the package root, as a reader's would: a tone already there
        // is kept aside and put back.
        let tone = root + "/tone", keptTone = root + "/.tone-kept-by-test"
        let hadTone = FileManager.default.fileExists(atPath: tone)
        if hadTone { try FileManager.default.moveItem(atPath: tone, toPath: keptTone) }
        defer {
            try? FileManager.default.removeItem(atPath: tone)
            if hadTone { try? FileManager.default.moveItem(atPath: keptTone, toPath: tone) }
        }
        for (document, block) in blocks {
            let daemon = try Daemon()
            let scratch = try makeTemporaryDirectory("recd-doc-commands")
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            // RECD_SOCKET: where the reader's recd listens; TMPDIR: where `mktemp -d` stages.
            let running = try DocumentedBlock(
                block, environment: ["RECD_SOCKET": daemon.socket, "TMPDIR": scratch], outputPath: scratch + "/output")
            defer { running.stop() }
            let activated = eventually(timeout: 240) {
                running.output.contains("\nactive\n") || !running.process.isRunning
            }
            #expect(
                activated && running.process.isRunning, "\(document):\n\(block)\nran:\n\(running.output.suffix(4000))")
            #expect(running.output.contains("\ncategory playback\n") && running.output.contains("\nattached\n"))
            let shown = try daemon.recctl("--json", "session", "show", "myapp").json
            #expect(shown?["state"] == "active", "\(document): recd has \(shown?.jsonText ?? "no session myapp")")
        }
    }

    @Test(
        "the source tree's blocks (swift build, scripts/audiosession-pc, cc with PKG_CONFIG_PATH inside $(...)) build examples/c/tone.c, which activates its session in recd",
        .timeLimit(.minutes(10)))
    func sourceTree() throws { try run(.sourceTree) }

    @Test(
        "the staged install's block (scripts/install --destdir, PKG_CONFIG_SYSROOT_DIR and PKG_CONFIG_PATH to the stage, LD_LIBRARY_PATH) builds tone.c, which activates its session in recd",
        .timeLimit(.minutes(10)))
    func stagedInstall() throws { try run(.staged) }
}
