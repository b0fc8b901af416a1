// Real sockets and real threads for the SystemSupport tests.
import Dispatch
import Foundation
import Glibc
import Platform
import Synchronization
import TestSupport
import Testing

@testable import SystemSupport

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A fresh directory under /tmp (short: socket paths are limited to 107 bytes).
func makeTemporaryDirectory() -> String {
    var template = Array("/tmp/recd-t-XXXXXX".utf8CString)
    let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    precondition(created != nil, "mkdtemp failed")
    return String(cString: created!)
}

func removeTree(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
}

/// Runs `body(index)` on `count` dedicated threads at once; false if they did not finish.
func runOnThreads(_ count: Int, timeout: Double = 20, _ body: @escaping @Sendable (Int) -> Void) -> Bool {
    let finished = DispatchSemaphore(value: 0)
    for index in 0..<count {
        let thread = Thread {
            body(index)
            finished.signal()
        }
        thread.start()
    }
    let deadline = DispatchTime.now() + timeout
    for _ in 0..<count where finished.wait(timeout: deadline) == .timedOut {
        return false
    }
    return true
}

enum ServerEvent: Equatable, Sendable {
    case connected(ClientID, PeerCredentials)
    case line(ClientID, String)
    /// A line that came with descriptors (`count` of them), or with `refused` ones.
    case passed(ClientID, String, count: Int, refused: Bool)
    case rejected(ClientID, ClientRejection)
    case disconnected(ClientID)
    case signal(Int32)
}

/// A handler whose behaviour tests script. Callbacks run on the control thread; what they
/// record is read by the test thread through a Mutex.
final class ScriptedHandler: ControlServerHandler, @unchecked Sendable {
    /// Set before the server runs, then only read.
    var server: ControlServer!
    /// Reply to each line; default echoes `echo:LINE`. Control thread.
    var onLine: (ScriptedHandler, ClientID, String) -> Void = { handler, client, line in
        handler.server.send("echo:" + line, to: client)
    }
    /// Runs before `onLine` for a line that came with descriptors (or refused ones); may take
    /// them. Control thread.
    var onDescriptors: (ScriptedHandler, ClientID, inout PassedDescriptors) -> Void = { _, _, _ in }
    var rejectionLine: (ClientRejection) -> String? = { reason in
        switch reason {
        case .lineTooLong(let limit): "rejected:lineTooLong:\(limit)"
        case .tooSlow: "rejected:tooSlow"
        case .tooManyClients: "rejected:tooManyClients"
        case .tooManyClientsOfUser(let uid, let limit): "rejected:tooManyClientsOfUser:\(uid):\(limit)"
        case .unreadOverUserBudget(let uid, let limit): "rejected:unreadOverUserBudget:\(uid):\(limit)"
        case .unreadOverServerBudget(let limit): "rejected:unreadOverServerBudget:\(limit)"
        }
    }
    let events = Mutex<[ServerEvent]>([])
    let ticks = Atomic<Int>(0)
    let controlThread = Mutex<pthread_t?>(nil)
    /// Clients that asked to "watch". Control thread only.
    var watchers: [ClientID] = []

    func record(_ event: ServerEvent) {
        events.withLock { $0.append(event) }
    }

    func snapshot() -> [ServerEvent] {
        events.withLock { $0 }
    }

    func connectedClients() -> [ClientID] {
        snapshot().compactMap { if case .connected(let id, _) = $0 { id } else { nil } }
    }

    func clientConnected(_ client: ClientID, peer: PeerCredentials) {
        record(.connected(client, peer))
    }

    func clientSentLine(_ client: ClientID, line: String, descriptors: inout PassedDescriptors) {
        if descriptors.isEmpty && !descriptors.refused {
            record(.line(client, line))
        } else {
            record(.passed(client, line, count: descriptors.count, refused: descriptors.refused))
            onDescriptors(self, client, &descriptors)
        }
        if line == "watch" {
            watchers.append(client)
            server.send("watching", to: client)
            return
        }
        onLine(self, client, line)
    }

    func clientRejected(_ client: ClientID, reason: ClientRejection) -> String? {
        record(.rejected(client, reason))
        return rejectionLine(reason)
    }

    func clientDisconnected(_ client: ClientID) {
        record(.disconnected(client))
        watchers.removeAll { $0 == client }
    }

    func tick(now: Double) {
        ticks.add(1, ordering: .relaxed)
    }

    /// What `isExemptFromUserLimits` answers; set before the server runs. The tests' peers are
    /// all this process, one uid: a test of per-user limits sets it false.
    var exemptByDefault = true
    func isExemptFromUserLimits(_ peer: PeerCredentials) -> Bool { exemptByDefault }

    /// What `wantsFrequentTicks` answers; any thread may set it.
    let frequentTicks = Atomic<Bool>(true)
    var wantsFrequentTicks: Bool { frequentTicks.load(ordering: .relaxed) }

    func signalReceived(_ signo: Int32) {
        record(.signal(signo))
    }
}

/// A ControlServer on a temporary socket, running on its own thread.
final class RunningServer: @unchecked Sendable {
    let directory: String
    let path: String
    let server: ControlServer
    let handler: ScriptedHandler
    private let finished = DispatchSemaphore(value: 0)
    private var stopped = false

    init(
        limits: ControlServer.Limits = .init(), signals: [Int32] = [],
        configure: (ScriptedHandler) -> Void = { _ in }
    ) throws {
        directory = makeTemporaryDirectory()
        path = directory + "/control.sock"
        let fd = try ControlServer.bindListener(path: path)
        server = try ControlServer(listeningFD: fd, limits: limits, watchingSignals: signals)
        handler = ScriptedHandler()
        handler.server = server
        configure(handler)
        let (server, handler, finished) = (self.server, self.handler, self.finished)
        let thread = Thread {
            handler.controlThread.withLock { $0 = pthread_self() }
            server.run(handler: handler)
            finished.signal()
        }
        thread.start()
    }

    /// Stops the server from this (non-control) thread; false if `run` did not return.
    @discardableResult
    func shutDown() -> Bool {
        if stopped { return true }
        stopped = true
        server.stop()
        let returned = finished.wait(timeout: .now() + 5) == .success
        removeTree(directory)
        return returned
    }

    /// Waits until `run` is inside its loop (a posted job has run).
    func waitUntilRunning() -> Bool {
        let ran = Atomic<Bool>(false)
        server.post { ran.store(true, ordering: .relaxed) }
        return eventually { ran.load(ordering: .relaxed) }
    }

    deinit { shutDown() }
}

/// A plain blocking client socket with a receive timeout.
final class TestClient {
    enum End: Equatable { case endOfFile, reset, timeout }

    let fd: Int32
    private var buffer: [UInt8] = []
    /// How the stream ended, once `readLine` has seen it end.
    private(set) var end: End?

    /// `receiveBuffer`: SO_RCVBUF in bytes (the kernel doubles it), for a client that reads
    /// little.
    init(path: String, receiveTimeout: Double = 5, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            throw TestFailure("connect \(path): errno \(code)")
        }
        var timeout = timeval(
            tv_sec: Int(receiveTimeout), tv_usec: Int((receiveTimeout - receiveTimeout.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { Glibc.close(fd) }

    /// Writes every byte (blocking); false if the server closed the connection.
    @discardableResult
    func send(bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if count < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += count
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(bytes: Array(text.utf8)) }

    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Ends the connection both ways (the descriptor stays open until deinit).
    func hangUp() { shutdown(fd, Int32(SHUT_RDWR)) }

    /// Reads some bytes into the buffer; the end if there are none.
    private func fill() -> End? {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                buffer.append(contentsOf: chunk[0..<count])
                return nil
            }
            if count == 0 { return .endOfFile }
            switch errno {
            case EINTR: continue
            case EAGAIN: return .timeout
            default: return .reset
            }
        }
    }

    /// The next line without its newline, or nil at the end (or on timeout).
    func readLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            if let end = fill() {
                self.end = end
                return nil
            }
        }
    }

    /// Every remaining line and how the stream ended.
    func readToEnd() -> (lines: [String], end: End) {
        var lines: [String] = []
        while true {
            if let line = readLine() {
                lines.append(line)
                continue
            }
            return (lines, end ?? .timeout)
        }
    }

    /// Discards everything until the stream ends; returns how it ended and the byte count.
    func drainToEnd() -> (bytes: Int, end: End) {
        var total = buffer.count
        buffer.removeAll()
        while true {
            if let end = fill() { return (total, end) }
            total += buffer.count
            buffer.removeAll()
        }
    }
}
