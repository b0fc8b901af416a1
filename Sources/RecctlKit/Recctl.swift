// recctl: one request per invocation (or a watch), human output or --json.
// Exit status: 0 ok, 1 the daemon refused (error: NAME (CODE): MESSAGE), 2 usage, 3 unreachable.
// Threads: the main thread only.
import ControlClient
import ControlProtocol
import Foundation
import Platform
import SessionPolicy

#if canImport(Glibc)
    import Glibc
#endif

public enum Recctl {
    public static func main(arguments: [String], environment: [String: String]) -> Int32 {
        // A parent may have left signals blocked; `recctl watch` must still stop on SIGTERM.
        var none = sigset_t()
        sigemptyset(&none)
        sigprocmask(SIG_SETMASK, &none, nil)
        let globals: GlobalOptions
        let words: [String]
        do {
            (globals, words) = try ArgumentParser.split(arguments)
        } catch let error as UsageError {
            return usageFailure(error)
        } catch {
            return 2
        }
        if words.isEmpty || words == ["help"] {
            print(overview)
            return globals.help || words == ["help"] ? 0 : 2
        }
        if globals.help || words.first == "help" {
            let topic = words.first == "help" ? Array(words.dropFirst()) : words
            let matching = commands.filter {
                Array(topic.prefix($0.path.count)) == $0.path || $0.path.starts(with: topic)
            }
            guard !matching.isEmpty else {
                return usageFailure(
                    UsageError(message: "no command \(topic.joined(separator: " "))", usage: "recctl --help"))
            }
            for spec in matching { print(spec.help) }
            return 0
        }
        let command: ParsedCommand
        do {
            command = try ArgumentParser.parse(words, commands: commands)
        } catch let error as UsageError {
            return usageFailure(error)
        } catch {
            return 2
        }
        // Done here as the caller, on files in recd's state directory.
        if command.spec.path.first == "web" {
            return WebCommands.run(command, globals: globals, environment: environment)
        }
        // Done here as the caller, by reading the archive: no request to recd.
        if command.spec.path == ["archive", "key"] || command.spec.path == ["archive", "prove"] {
            return ArchiveProofCommands.run(command, globals: globals, environment: environment)
        }
        // recd exports the stretch; recctl measures it (ArchiveLoudnessCommand.swift).
        if command.spec.path == ["archive", "loudness"] {
            return ArchiveLoudnessCommand.run(command, globals: globals, environment: environment)
        }
        let request: Command
        do {
            request = try buildRequest(command)
        } catch let error as UsageError {
            return usageFailure(error)
        } catch let error as SessionError {
            Output(json: globals.json).failure(error)
            return 1
        } catch {
            return 2
        }

        // recd never opens the file a play request names: `play FILE` opens it here, with the
        // caller's rights, and passes the open file with the request.
        var opened: [OwnedFile] = []
        if request.op == .play, command.positionals.count > 1 {
            do {
                opened = [try openForPlaying(command.positionals[1])]
            } catch {
                printError("error: \(error.message)\n")
                return 1
            }
        }
        // `archive export` opens its output here, as the caller: recd writes the clip into it.
        var createdOutput: String?
        var exportFailed = true
        var passingStandardOutput = false
        if case .archiveExport(let export) = request {
            if export.file == "-" {
                passingStandardOutput = true
            } else {
                do {
                    opened = [try OwnedFile(export.file, .createExclusive(permissions: 0o644))]
                    createdOutput = export.file
                } catch {
                    let hint = error.errno == .fileExists ? "; choose a new name, recctl does not overwrite files" : ""
                    printError("error: cannot create \(export.file): \(error.message)\(hint)\n")
                    return 1
                }
            }
        }
        // A clip that was not written leaves no file behind.
        defer { if let createdOutput, exportFailed { unlink(createdOutput) } }
        // Closed when `opened` goes, after the request is answered.
        let passing = opened.map(\.descriptor) + (passingStandardOutput ? [1] : [])

        let candidates = ControlSocket.candidates(globals.socket, environment: environment)
        let connection: Connection
        do {
            connection = try Connection(candidates: candidates, interface: .recctl)
        } catch {
            printError(
                "error: cannot reach recd (looked at \(error.tried.joined(separator: ", "))): \(error.reason). Is recd running? Start it with scripts/run or `systemctl start recd`, or pass --socket PATH.\n"
            )
            return 3
        }
        let output = Output(json: globals.json, toStandardError: passingStandardOutput)
        do {
            if case .watch(let app) = request {
                var watch = Watch(candidates: candidates, app: app, output: output)
                return try watch.run(first: connection)
            }
            if case .sessionAttach(let attach) = request {
                return try holdAttachment(connection, attach, output: output)
            }
            if request.op == .meter && !command.has("once") {
                return try liveMeters(connection, request, output: output)
            }
            // An export of days of audio may take minutes; recd answers once the file is complete.
            let timeout: Double? = request.op == .permissionRequest || request.op == .archiveExport ? nil : 30
            var reply = try connection.call(request, passing: passing, timeout: timeout)
            switch request {
            case .sessionList:
                reply = try allPages(connection, first: reply, key: "sessions") { .sessionList(offset: $0, limit: nil) }
            case .archiveList(let app, let since, _, _):
                reply = try allPages(connection, first: reply, key: "segments") {
                    .archiveList(app: app, since: since, offset: $0)
                }
            default: break
            }
            if let error = Wire.error(from: reply), reply["ok"]?.boolValue != true {
                output.failure(error)
                return 1
            }
            if case .archiveExport(let export) = request, export.proof {
                // Written here, as the caller, beside the clip; a clip without its proof is a failure.
                guard let proof = reply["proof"]?.stringValue else {
                    printError("error: recd sent no proof for \(export.file)\n")
                    return 1
                }
                do {
                    let file = try OwnedFile(export.file + ".proof", .createExclusive(permissions: 0o644))
                    try file.writeAll(Array(proof.utf8), at: 0)
                } catch {
                    printError("error: cannot write \(export.file).proof: \(error.message)\n")
                    return 1
                }
            }
            if case .archiveExport(let export) = request, export.credentials, export.format == "flac" {
                // A FLAC clip's Content Credentials: a sidecar manifest store beside it, written as the caller.
                guard let encoded = reply["credentials"]?.stringValue, let store = Data(base64Encoded: encoded) else {
                    printError("error: recd sent no Content Credentials for \(export.file)\n")
                    return 1
                }
                do {
                    let file = try OwnedFile(export.file + ".c2pa", .createExclusive(permissions: 0o644))
                    try file.writeAll([UInt8](store), at: 0)
                } catch {
                    printError("error: cannot write \(export.file).c2pa: \(error.message)\n")
                    return 1
                }
            }
            exportFailed = false
            try output.success(command: command, reply: reply)
            // A verification that found damage is a failure for scripts.
            return reply["allOK"]?.boolValue == false ? 1 : 0
        } catch let error as ReplyDecodingError {
            printError("error: recd sent a reply this recctl does not understand: \(error.message)\n")
            return 1
        } catch ClientFailure.io(let message), ClientFailure.timedOut(let message) {
            printError("error: \(message)\n")
            return 3
        } catch {
            printError("error: \(error)\n")
            return 1
        }
    }

    /// `session list` and `archive list` show everything: recd answers a page at a time
    /// (`next`: the offset of the following page, null on the last), so the pages after
    /// `first` are asked for with `request(offset)` and their `key` lists joined into one reply
    /// of that list only, as before paging (`--json` prints the list).
    static func allPages(
        _ connection: Connection, first: JSONValue, key: String, request: (Int) -> Command
    ) throws -> JSONValue {
        guard first["ok"]?.boolValue == true else { return first }
        // recd's own objects, not re-encoded: a newer recd's keys pass through to --json.
        var items = first[key]?.arrayValue ?? []
        var reply = first
        var offset = 0
        // Entries come and go meanwhile; a page that does not move on ends the listing.
        while let next = reply["next"]?.intValue, next > offset {
            offset = next
            reply = try connection.call(request(next))
            guard reply["ok"]?.boolValue == true else { return reply }
            items += reply[key]?.arrayValue ?? []
        }
        let kept = (first.objectValue ?? []).filter { $0.0 == "id" || $0.0 == "ok" }
        return .object(kept + [(key, .array(items))])
    }

    /// Why recctl could not open a file to play.
    struct OpenFailure: Error {
        var message: String
    }

    /// Opens `path` for `play` as the calling user: read-only, close-on-exec, and non-blocking
    /// so a FIFO cannot hang us (it means nothing for regular files; recd reads with pread).
    static func openForPlaying(_ path: String) throws(OpenFailure) -> OwnedFile {
        do {
            return try OwnedFile(path, .readOnlyNonBlocking)
        } catch {
            let hint = error.errno == .permissionDenied ? "; recd plays only files you may read yourself" : ""
            throw OpenFailure(message: "cannot open \(path): \(error.message)\(hint)")
        }
    }

    static func usageFailure(_ error: UsageError) -> Int32 {
        let usage = HelpText.wrap(HelpText.words(of: error.usage), indent: "usage: ", continuation: "        ")
        printError("recctl: \(error.message)\n" + usage.joined(separator: "\n") + "\n")
        return 2
    }
}

/// Writes a message to standard error in one write(2).
func printError(_ message: String) {
    let bytes = Array(message.utf8)
    bytes.withUnsafeBytes { try? Descriptor.writeAll(Descriptor.standardError, $0, path: nil) }
}
