// `recctl archive key` and `recctl archive prove`: done here, by recctl, as the calling user
// (docs/archive-proof.md). Proving needs no power of recd's: it reads the segments, the chains
// and the signatures with the caller's own rights, and trusts only the public key it is given,
// so it works the same on a copy of the archive on another machine, with recd stopped, or
// against a recd that is itself in doubt. recd is asked only where its archive is, when
// `--dir` does not say.
import ArchiveEvidence
import ArchiveProof
import ControlClient
import ControlProtocol
import Foundation
import Platform
import SessionPolicy

enum ArchiveProofCommands {
    /// Runs `archive key` or `archive prove`; the exit status (0 only when all holds).
    static func run(_ command: ParsedCommand, globals: GlobalOptions, environment: [String: String]) -> Int32 {
        if let clip = command.value("clip") {
            return proveClip(Recctl.absolute(clip), command: command, json: globals.json)
        }
        let directory: String
        // recd's record of what it signed: given, or recd's own when recd says where its archive is.
        var heads = command.value("heads").map { Recctl.absolute($0) }
        // The roots time-stamps are checked against: given, or recd's `tsa_ca_file`.
        var tsaRoots = command.value("tsa-ca").map { Recctl.absolute($0) }
        if let given = command.value("dir") {
            directory = Recctl.absolute(given)
        } else {
            let (asked, configuredRoots) = askArchive(globals: globals, environment: environment)
            switch asked {
            case .success(let archive, let state):
                directory = archive
                if heads == nil, let state { heads = state + "/" + ChainHeads.directoryName }
                if tsaRoots == nil { tsaRoots = configuredRoots }
            case .failure(let message):
                printError("error: \(message); or pass --dir ARCHIVE (the archive's root, or a copy of it)\n")
                return 3
            }
        }
        if command.spec.path == ["archive", "key"], command.has("csr") {
            // recd writes the request at its start, signed with the key it holds (recctl never reads the key).
            let path = directory + "/" + ChainLayout.certificateRequestFileName
            guard let request = try? OwnedFile(path, .readOnlyNoFollow).read(count: 64 * 1024, at: 0),
                String(decoding: request, as: UTF8.self).hasPrefix("-----BEGIN CERTIFICATE REQUEST-----")
            else {
                printError("error: no certificate request at \(path); recd writes it at its start\n")
                return 1
            }
            print(String(decoding: request, as: UTF8.self), terminator: "")
            return 0
        }
        if command.spec.path == ["archive", "key"] {
            let path = directory + "/" + ChainLayout.publicKeyFileName
            do throws(ProofError) {
                print(try ArchivePublicKey.load(path).text)
                return 0
            } catch {
                printError("error: \(error.message); recd writes \(path) at its start\n")
                return 1
            }
        }
        return prove(command, directory: directory, heads: heads, tsaRoots: tsaRoots, json: globals.json)
    }

    private static func prove(
        _ command: ParsedCommand, directory: String, heads headsPath: String?, tsaRoots: String?, json: Bool
    ) -> Int32 {
        let keyArgument = command.value("key") ?? directory + "/" + ChainLayout.publicKeyFileName
        let key: ArchivePublicKey
        do throws(ProofError) {
            key = try ArchivePublicKey.load(keyArgument)
        } catch {
            printError("error: \(error.message)\n")
            return 1
        }
        var scope = ProofScope(app: command.value("app"), stream: command.value("stream"))
        do {
            scope.from = try command.value("from").map { try chainTime($0, flag: "from") }
            scope.to = try command.value("to").map { try chainTime($0, flag: "to") }
        } catch let error as UsageError {
            return Recctl.usageFailure(error)
        } catch {
            return 2
        }
        if scope.stream != nil && scope.app == nil {
            return Recctl.usageFailure(UsageError(message: "--stream needs --app", usage: command.spec.usage))
        }
        // A record that cannot be read (recd's state directory, as another user) proves nothing either
        // way: said, not held against the archive.
        var heads: ChainHeads?
        var headsNote = ""
        if let headsPath {
            if FileSystem.isListableDirectory(headsPath) {
                heads = ChainHeads(directory: headsPath)
            } else if command.value("heads") != nil {
                printError("error: cannot read \(headsPath): pass recd's STATE_DIR/chain-heads or a copy of it\n")
                return 1
            } else {
                headsNote =
                    "; recd's record of what it signed (\(headsPath)) is not readable to you: a chain cut short or "
                    + "put back is not caught (run as root, or pass --heads)"
            }
        } else {
            headsNote =
                "; not checked against recd's record of what it signed (pass --heads): a chain cut short or "
                + "put back is not caught"
        }
        var report = ArchiveProver.prove(archiveDirectory: directory, key: key, scope: scope, heads: heads)
        let stamps = TimeStampProof.check(root: directory, report: report, caFile: tsaRoots)
        report.findings += stamps.findings
        let roots = tsaRoots ?? "the system's roots (pass --tsa-ca)"
        let summary =
            ProofCertificate.summary(of: report, key: key)
            + (command.value("key") == nil ? " (the archive's own copy: pass --key for an independent proof)" : "")
            + headsNote
        if json {
            let findings = JSONValue.array(
                report.findings.map { finding in
                    .object([
                        ("kind", .string(finding.kind)), ("name", .string(finding.name)),
                        ("message", .string(finding.description)),
                    ])
                })
            print(
                JSONValue.object([
                    ("holds", .bool(report.holds)), ("segmentsProven", .number(Double(report.segmentsProven))),
                    ("segmentsRemoved", .number(Double(report.segmentsRemoved))),
                    ("chains", .number(Double(report.chains))), ("signedChains", .number(Double(report.signedChains))),
                    ("beingRecorded", .array(report.beingRecorded.map { .string($0) })),
                    ("againstRecord", .bool(report.againstRecord)), ("key", .string(key.text)), ("findings", findings),
                    ("timeStamps", stamps.json(roots: roots)),
                ]
                ).jsonText)
        } else {
            for finding in report.findings { print(finding.description) }
            for segment in stamps.covered {
                print(
                    "time-stamped: \(segment.path) existed before \(TimeStampProof.utc(segment.before)) "
                        + "(\(segment.token), \(segment.signer))")
            }
            if stamps.tokens > 0 || !stamps.covered.isEmpty {
                print(
                    "time-stamps: \(stamps.trusted) of \(Readable.count(stamps.tokens, "token")) trusted "
                        + "(roots: \(roots)); "
                        + "\(Readable.count(stamps.covered.count, "segment")) time-stamped, \(stamps.uncovered.count) "
                        + "not yet")
            }
            print(summary)
        }
        if let reportPath = command.value("report").map({ Recctl.absolute($0) }) {
            let record =
                heads != nil
                ? "checked against recd's record of what it signed (\(headsPath ?? ""))"
                : String(headsNote.drop { $0 == ";" || $0 == " " })
            let certificate = ProofCertificate.archive(
                directory: directory, scope: scope, key: key, keyGiven: command.value("key") != nil, record: record,
                roots: roots, report: report, stamps: stamps, summary: summary, checkedBy: checker)
            guard writeReport(ProofReportPage.html(certificate), to: reportPath, json: json) else { return 1 }
        }
        return report.holds ? 0 : 1
    }

    /// The report's "Checked by": recctl, as its caller.
    private static var checker: String { ProofCertificate.checker(program: "recctl \(recdVersion)") }

    /// The report written, said on standard error (standard output is prove's, or its JSON).
    private static func writeReport(_ html: String, to path: String, json: Bool) -> Bool {
        do throws(ProofReportPage.WriteError) {
            try ProofReportPage.write(html, to: path)
        } catch {
            printError("error: \(error.message)\n")
            return false
        }
        if !json { printError("report written to \(path)\n") }
        return true
    }

    /// `prove --clip FILE --key KEY`: the clip against `FILE.proof`, with nothing but the key.
    private static func proveClip(_ clip: String, command: ParsedCommand, json: Bool) -> Int32 {
        guard let keyArgument = command.value("key") else {
            return Recctl.usageFailure(
                UsageError(
                    message: "--clip needs --key: the box's public key (`recctl archive key` on the box)",
                    usage: command.spec.usage))
        }
        let proofPath = clip + ".proof"
        let key: ArchivePublicKey
        do throws(ProofError) {
            key = try ArchivePublicKey.load(keyArgument)
        } catch {
            printError("error: \(error.message)\n")
            return 1
        }
        let text: String
        do throws(SystemError) {
            // A proof holds a few chains' lines: bounded where it enters.
            text = String(decoding: try OwnedFile(proofPath, .readOnly).read(count: 16 << 20, at: 0), as: UTF8.self)
        } catch {
            printError(
                "error: cannot read \(proofPath): \(error.message); `recctl archive export --proof` writes it beside "
                    + "the clip\n")
            return 1
        }
        let findings = ClipProof.verify(clipPath: clip, proofPath: proofPath, proofText: text, key: key)
        if json {
            print(
                JSONValue.object([
                    ("holds", .bool(findings.isEmpty)), ("key", .string(key.text)),
                    (
                        "findings",
                        .array(
                            findings.map {
                                .object([
                                    ("kind", .string($0.kind)), ("name", .string($0.name)),
                                    ("message", .string($0.description)),
                                ])
                            })
                    ),
                ]
                ).jsonText)
        }
        let summary = "\(findings.isEmpty ? "holds" : "DOES NOT HOLD"): \(clip) against \(proofPath); key \(key.text)"
        if !json {
            for finding in findings { print(finding.description) }
            print(summary)
        }
        if let reportPath = command.value("report").map({ Recctl.absolute($0) }) {
            let certificate = ProofCertificate.clip(
                path: clip, proofPath: proofPath, proofText: text, key: key, findings: findings, summary: summary,
                checkedBy: checker)
            guard writeReport(ProofReportPage.html(certificate), to: reportPath, json: json) else { return 1 }
        }
        return findings.isEmpty ? 0 : 1
    }

    /// A time as the chains write START: UTC, microseconds.
    static func chainTime(_ text: String, flag: String, now: Date = Date(), timeZone: TimeZone = .current) throws
        -> String
    {
        let wire = try TimeArgument.resolve(text, flag: flag, now: now, timeZone: timeZone)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = formatter.date(from: wire) ?? ISO8601DateFormatter().date(from: wire) else {
            throw UsageError(
                message: "--\(flag) \"\(text)\" is not a time; write one of: \(TimeArgument.forms)",
                usage: "recctl help archive prove")
        }
        return TimeArgument.wire(date, microseconds: true)
    }

    enum Asked { case success(archive: String, state: String?), failure(String) }

    /// The archive's root and the state directory from recd's `status`.
    static func askArchiveDirectory(globals: GlobalOptions, environment: [String: String]) -> Asked {
        askArchive(globals: globals, environment: environment).asked
    }

    /// `askArchiveDirectory`, and recd's `[evidence] tsa_ca_file` when it has one.
    static func askArchive(globals: GlobalOptions, environment: [String: String]) -> (
        asked: Asked, tsaRoots: String?
    ) {
        let candidates = ControlSocket.candidates(globals.socket, environment: environment)
        do {
            let connection = try Connection(candidates: candidates, interface: .recctl)
            let reply = try connection.call(.status)
            let status = try StatusInfo(json: reply)
            let daemon = status.daemon
            guard let directory = daemon.archiveDir else {
                return (.failure("recd's status does not say where its archive is"), nil)
            }
            return (.success(archive: directory, state: daemon.stateDir), status.timeStamps?.caFile)
        } catch let error as Unreachable {
            return (.failure("cannot reach recd to ask where its archive is (\(error.reason))"), nil)
        } catch {
            return (.failure("recd did not say where its archive is (\(error))"), nil)
        }
    }
}

extension TimeStampProofReport {
    /// `prove --json`'s `timeStamps`: the counts, the roots, each covered segment's time.
    fileprivate func json(roots: String) -> JSONValue {
        let segments: [JSONValue] = covered.map { segment in
            let fields: [(String, JSONValue)] = [
                ("path", .string(segment.path)), ("entry", .number(Double(segment.entry))),
                ("existedBefore", .string(TimeStampProof.utc(segment.before))),
                ("existedBeforeUnix", .number(Double(segment.before))), ("token", .string(segment.token)),
                ("tsa", .string(segment.signer)),
            ]
            return .object(fields)
        }
        let fields: [(String, JSONValue)] = [
            ("tokens", .number(Double(tokens))), ("trusted", .number(Double(trusted))), ("roots", .string(roots)),
            ("segments", .array(segments)), ("notStamped", JSONValue(uncovered)),
        ]
        return .object(fields)
    }
}
