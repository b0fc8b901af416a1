// Descriptors passed with request lines (SCM_RIGHTS) through the real control server: which
// line they belong to, that the handler can use them, that none leaks, and the per-line cap.
import Dispatch
import Foundation
import Glibc
import Platform
import Synchronization
import TestSupport
import Testing

@testable import SystemSupport

@Suite("ControlServer descriptor passing", .serialized)
struct DescriptorPassingTests {
    @Test("a line sent with one descriptor: the handler reads the file through it")
    func handlerReadsThroughDescriptor() throws {
        let content = "the file behind the descriptor\n"
        let fixture = try PassingFixture(content: content, readingPassedFiles: true)
        let client = try TestClient(path: fixture.running.path)
        let line = #"{"id":1,"op":"play"}"#
        try DescriptorPassing.sendLine(line, passing: [fixture.file], over: client.fd)
        #expect(client.readLine() == "echo:" + line)
        #expect(fixture.filesRead == [line: content])
        #expect(lineEvents(fixture.running) == [.passed(ClientID(rawValue: 1), line, count: 1, refused: false)])
    }

    @Test(
        "two lines where only the second carries a descriptor: it goes with the second",
        arguments: [false, true])
    func descriptorGoesWithItsLine(readTogether: Bool) throws {
        let fixture = try PassingFixture(content: "second's file", readingPassedFiles: true)
        let client = try TestClient(path: fixture.running.path)
        // Holding the control thread makes one recvmsg read both lines: the descriptor then
        // arrives with bytes of the first line, yet belongs to the second.
        let gate = readTogether ? try holdControlThread(fixture.running) : nil
        client.send("first\n")
        try DescriptorPassing.sendLine("second", passing: [fixture.file], over: client.fd)
        gate?.signal()
        #expect(client.readLine() == "echo:first")
        #expect(client.readLine() == "echo:second")
        let id = ClientID(rawValue: 1)
        #expect(lineEvents(fixture.running) == [.line(id, "first"), .passed(id, "second", count: 1, refused: false)])
        #expect(fixture.filesRead == ["second": "second's file"])
    }

    @Test("descriptors the handler does not take are closed: /proc/self/fd is back to its count")
    func unclaimedDescriptorsAreClosed() throws {
        let fixture = try PassingFixture(content: "x", limits: .init(maxLineBytes: 1024))
        let (running, file) = (fixture.running, fixture.file)
        #expect(running.waitUntilRunning())
        let before = openDescriptorCount()
        do {
            let client = try TestClient(path: running.path)
            for count in [1, 2, 4] {
                try DescriptorPassing.sendLine(
                    "keep none of \(count)", passing: Array(repeating: file, count: count), over: client.fd)
                #expect(client.readLine() == "echo:keep none of \(count)")
            }
            try DescriptorPassing.sendLine("refused", passing: Array(repeating: file, count: 9), over: client.fd)
            #expect(client.readLine() == "echo:refused")
        }
        do {
            // Descriptors with an unterminated last line: delivered at the end, then closed.
            let client = try TestClient(path: running.path)
            #expect(sendRights(client.fd, "unterminated", [file, file]))
            client.shutdownWrite()
            #expect(client.readToEnd().lines == ["echo:unterminated"])
        }
        do {
            // Descriptors with the start of a line that grows too long: never delivered.
            let client = try TestClient(path: running.path)
            #expect(sendRights(client.fd, "too long", [file, file, file]))
            client.send(String(repeating: "x", count: 2000) + "\n")
            #expect(client.readToEnd().lines == ["rejected:lineTooLong:1024"])
        }
        let expected = [
            ServerEvent.passed(ClientID(rawValue: 2), "unterminated", count: 2, refused: false),
            .rejected(ClientID(rawValue: 3), .lineTooLong(limit: 1024)),
        ]
        #expect(eventually { expected.allSatisfy(running.handler.snapshot().contains) })
        #expect(eventually { openDescriptorCount() == before }, "\(openDescriptorCount()) open, \(before) before")
    }

    @Test("more descriptors than the limit: the line is delivered refused and every one is closed")
    func tooManyDescriptorsAreRefused() throws {
        let fixture = try PassingFixture(content: "x", limits: .init(maxDescriptorsPerLine: 4))
        let (running, file) = (fixture.running, fixture.file)
        let client = try TestClient(path: running.path)
        let id = ClientID(rawValue: 1)
        client.send("hello\n")
        #expect(client.readLine() == "echo:hello")
        let before = openDescriptorCount()
        try DescriptorPassing.sendLine("four", passing: Array(repeating: file, count: 4), over: client.fd)
        try DescriptorPassing.sendLine("five", passing: Array(repeating: file, count: 5), over: client.fd)
        // One line in two sendmsgs of three descriptors each: six for the line.
        #expect(sendRights(client.fd, "three ", [file, file, file]))
        try DescriptorPassing.sendLine("and three", passing: [file, file, file], over: client.fd)
        // More than the kernel hands one recvmsg (MSG_CTRUNC): what arrives is closed too.
        #expect(sendRights(client.fd, "twenty\n", Array(repeating: file, count: 20)))
        client.send("none\n")
        for line in ["four", "five", "three and three", "twenty", "none"] {
            #expect(client.readLine() == "echo:" + line)
        }
        #expect(
            lineEvents(running) == [
                .line(id, "hello"),
                .passed(id, "four", count: 4, refused: false),
                .passed(id, "five", count: 0, refused: true),
                .passed(id, "three and three", count: 0, refused: true),
                .passed(id, "twenty", count: 0, refused: true),
                .line(id, "none"),
            ])
        #expect(eventually { openDescriptorCount() == before }, "\(openDescriptorCount()) open, \(before) before")
    }

    // MARK: Helpers

    /// The lines the handler got, with or without descriptors, in order.
    private func lineEvents(_ running: RunningServer) -> [ServerEvent] {
        running.handler.snapshot().filter { event in
            switch event {
            case .line, .passed: true
            default: false
            }
        }
    }

    /// Blocks the control thread in posted work until the returned semaphore is signalled.
    private func holdControlThread(_ running: RunningServer) throws -> DispatchSemaphore {
        let gate = DispatchSemaphore(value: 0)
        let held = DispatchSemaphore(value: 0)
        running.server.post {
            held.signal()
            gate.wait()
        }
        guard held.wait(timeout: .now() + 5) == .success else { throw TestFailure("control thread not held") }
        return gate
    }
}

/// A file open read-only (`file`) and a control server on a temporary socket; both go away
/// with the fixture. With `readingPassedFiles`, the handler takes each line's first passed
/// descriptor, reads the file through it, closes it, and keeps the text by line.
final class PassingFixture {
    let directory = makeTemporaryDirectory()
    let file: Int32
    let running: RunningServer
    private let read = ReadFiles()

    init(content: String, limits: ControlServer.Limits = .init(), readingPassedFiles: Bool = false) throws {
        let path = directory + "/passed.txt"
        try content.write(toFile: path, atomically: false, encoding: .utf8)
        file = open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { throw TestFailure("open \(path): errno \(errno)") }
        let read = self.read
        running = try RunningServer(limits: limits) { handler in
            guard readingPassedFiles else { return }
            handler.onDescriptors = { handler, _, descriptors in
                guard let fd = descriptors.take(), case .passed(_, let line, _, _) = handler.snapshot().last else {
                    return
                }
                read.texts.withLock { $0[line] = readWhole(fd) }
                close(fd)
            }
        }
    }

    deinit {
        running.shutDown()
        close(file)
        removeTree(directory)
    }

    /// What the handler read through passed descriptors, by the line they came with.
    var filesRead: [String: String] { read.texts.withLock { $0 } }

    private final class ReadFiles: Sendable {
        let texts = Mutex<[String: String]>([:])
    }
}

/// The whole file behind `fd`, read with pread from its start.
func readWhole(_ fd: Int32) -> String {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(bytes.count)) }
        if count <= 0 { return String(decoding: bytes, as: UTF8.self) }
        bytes += chunk[..<count]
    }
}

/// Descriptors this process has open now.
func openDescriptorCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// One sendmsg of `text` with `descriptors` as SCM_RIGHTS, laid out here rather than by
/// `DescriptorPassing`, so that a test can pass more than it allows and split a line.
func sendRights(_ socket: Int32, _ text: String, _ descriptors: [Int32]) -> Bool {
    let headerSize = MemoryLayout<cmsghdr>.size
    let dataSize = descriptors.count * MemoryLayout<Int32>.size
    let alignment = MemoryLayout<Int>.size
    var control = [UInt8](repeating: 0, count: headerSize + (dataSize + alignment - 1) / alignment * alignment)
    control.withUnsafeMutableBytes { raw in
        var header = cmsghdr()
        header.cmsg_len = headerSize + dataSize
        header.cmsg_level = SOL_SOCKET
        header.cmsg_type = Int32(SCM_RIGHTS)
        raw.storeBytes(of: header, as: cmsghdr.self)
        for (index, descriptor) in descriptors.enumerated() {
            raw.storeBytes(of: descriptor, toByteOffset: headerSize + index * 4, as: Int32.self)
        }
    }
    var bytes = Array(text.utf8)
    let sent = bytes.withUnsafeMutableBytes { data in
        control.withUnsafeMutableBytes { controlBytes in
            var vector = iovec(iov_base: data.baseAddress, iov_len: data.count)
            return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                var message = msghdr()
                message.msg_iov = vectorPointer
                message.msg_iovlen = 1
                message.msg_control = controlBytes.baseAddress
                message.msg_controllen = controlBytes.count
                return sendmsg(socket, &message, Int32(MSG_NOSIGNAL))
            }
        }
    }
    return sent == bytes.count
}
