// The status page's data: what the HTTP routes `/api/segments`, `/events`
// and `/archive/...` serve, without touching the control thread's state.
//
// Threads:
// - `MeterFeed.publish` and `isWanted`: the control thread (the tick), which renders the
//   meters only while a browser listens; `subscribe`: the HTTP thread.
// - Everything else: the HTTP thread(s). The archive is read through the page's own index
//   connection (WAL: readers never wait for the recorders' writes), opened on first use.
import Archive
import ControlProtocol
import HTTPServer
import Platform
import Synchronization
import SystemSupport

/// The live meters as server-sent events (`/events`): the control thread sends each tick's
/// `meters` event (about 10 Hz) to every open stream, and renders nothing while none is open.
/// A stream the client left, that fell `maxQueuedBytes` behind, whose connection could take
/// nothing for `stallSeconds` (a client that stopped reading: its socket buffers are full), or
/// that is `maxLifetimeSeconds` old is closed by the listener, its slot free at once, and
/// dropped here at the next tick. Any thread.
final class MeterFeed: Sendable {
    /// Streams open at once; more get 503.
    static let maxListeners = 16
    /// Bytes waiting for one client before it is cut off: a reading browser has one event
    /// (under 1 kB) waiting at most.
    static let maxQueuedBytes = 16 * 1024
    /// Seconds a stream's connection may take nothing before it is cut off.
    static let stallSeconds = 5.0
    /// Seconds a stream lasts; the page's EventSource then reconnects within `retryMilliseconds`.
    /// The only bound on a client that reads nothing while its kernel takes the meters into a
    /// growing receive buffer (megabytes: the 13 minutes the issue measured).
    static let maxLifetimeSeconds = 60.0
    static let retryMilliseconds = 1000
    private let streams = Mutex<[HTTPEventStream]>([])

    /// Whether any stream is open: the control thread renders meters only then.
    var isWanted: Bool { streams.withLock { !$0.isEmpty } }

    /// A new stream for one client, or nil when `maxListeners` are open. HTTP thread.
    func subscribe() -> HTTPEventStream? {
        let stream = HTTPEventStream(
            maxQueuedBytes: Self.maxQueuedBytes, keepAliveSeconds: 2, stallSeconds: Self.stallSeconds,
            maxLifetimeSeconds: Self.maxLifetimeSeconds, retryMilliseconds: Self.retryMilliseconds)
        let added = streams.withLock { open -> Bool in
            open.removeAll { $0.isClosed }
            guard open.count < Self.maxListeners else { return false }
            open.append(stream)
            return true
        }
        return added ? stream : nil
    }

    /// Sends `meters` (a `MetersInfo`'s JSON) to every open stream. Control thread; it only
    /// queues bytes (the connection threads write them).
    func publish(_ meters: JSONValue) {
        let data = meters.jsonText
        streams.withLock { open in open.removeAll { !$0.send(event: "meters", data: data) } }
    }
}

/// The page's view of the archive: the recent segments and the files it may serve. Any thread:
/// the index connection is used only under `lock`, one request at a time (hence
/// `@unchecked Sendable`).
final class StatusPageArchive: @unchecked Sendable {
    let directory: String
    let indexPath: String
    private let lock = Mutex(())
    private var connection: ArchiveIndex?

    /// How many segments `/api/segments` lists, newest first.
    static let recentCount = 20

    init(directory: String) {
        self.directory = directory
        indexPath = directory + "/index.sqlite"
    }

    private func withIndex<T>(_ body: (ArchiveIndex) throws(ArchiveError) -> T) throws(ArchiveError) -> T {
        // Not `withLock`: its result is `sending`, and a served file's `OwnedFile` is not Sendable.
        lock._unsafeLock()
        defer { lock._unsafeUnlock() }
        if connection == nil { connection = try ArchiveIndex(path: indexPath) }
        return try body(connection!)
    }

    /// `/api/segments`: the newest `recentCount` segments as `archive.list` describes them,
    /// each with `file` (its path below the archive) and `url` (where `/archive/` serves it).
    func recentSegments() throws(ArchiveError) -> JSONValue {
        let records = try withIndex { (index) throws(ArchiveError) in try index.latest(limit: Self.recentCount) }
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        let canonicalPrefix = (FileSystem.canonicalPath(directory) ?? directory) + "/"
        return [
            "segments": .array(
                records.compactMap { record in
                    let relative =
                        record.path.hasPrefix(prefix)
                        ? String(record.path.dropFirst(prefix.count))
                        : record.path.hasPrefix(canonicalPrefix)
                            ? String(record.path.dropFirst(canonicalPrefix.count)) : nil
                    guard let relative else { return nil }
                    var json = ArchiveService.segmentInfo(record).json
                    json.set("file", .string(relative))
                    json.set("url", .string("archive/" + Self.percentEncoded(relative)))
                    return json
                })
        ]
    }

    /// `/archive/<relative>`: the finished segment, opened under every rule of
    /// `ArchivePath.openFinishedSegment`; nil (404) when any fails.
    func openSegment(_ relative: String) -> ServedSegment? {
        do {
            return try withIndex { (index) throws(ArchiveError) in
                try ArchivePath.openFinishedSegment(relative, archiveDirectory: directory, index: index)
            }
        } catch {
            Log.debug("status page: /archive/\(relative) refused: \(error.message)")
            return nil
        }
    }

    /// A path for a URL: each component percent-encoded but for RFC 3986's unreserved set.
    static func percentEncoded(_ path: String) -> String {
        var out = ""
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                out += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 15)]], as: UTF8.self)
            }
        }
        return out
    }
}
