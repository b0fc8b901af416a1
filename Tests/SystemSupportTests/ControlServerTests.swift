// The control server against real sockets and real threads.
import Dispatch
import Foundation
import Glibc
import Platform
import Synchronization
import TestSupport
import Testing

@testable import SystemSupport

@Suite("ControlServer")
struct ControlServerTests {
    @Test("50 concurrent clients, 20 requests each, every reply arrives")
    func concurrentClients() throws {
        let running = try RunningServer()
        defer { #expect(running.shutDown()) }
        let path = running.path
        let correctReplies = Atomic<Int>(0)
        let finished = runOnThreads(50) { index in
            guard let client = try? TestClient(path: path) else { return }
            for request in 0..<20 {
                let text = #"{"id":\#(request),"op":"status","client":\#(index)}"#
                client.send(text + "\n")
                if client.readLine() == "echo:" + text { correctReplies.add(1, ordering: .relaxed) }
            }
        }
        #expect(finished)
        #expect(correctReplies.load(ordering: .relaxed) == 50 * 20)
        #expect(
            eventually {
                running.handler.snapshot().filter { if case .disconnected = $0 { true } else { false } }.count
                    == 50
            })
    }

    @Test("peer credentials are our own pid, uid, gid and groups")
    func peerCredentials() throws {
        let running = try RunningServer()
        defer { running.shutDown() }
        let client = try TestClient(path: running.path)
        client.send("hello\n")
        #expect(client.readLine() == "echo:hello")
        let peers = running.handler.snapshot().compactMap { event -> PeerCredentials? in
            if case .connected(_, let peer) = event { peer } else { nil }
        }
        let peer = try #require(peers.first)
        #expect(peer.pid == getpid())
        #expect(peer.uid == getuid())
        #expect(peer.gid == getgid())
        var groups = [gid_t](repeating: 0, count: 256)
        let count = getgroups(Int32(groups.count), &groups)
        #expect(Set(peer.groups) == Set(groups.prefix(Int(max(count, 0)))))
        #expect(peer.isMember(of: getgid()))
    }

    @Test("a line split across three writes is reassembled")
    func splitLine() throws {
        let running = try RunningServer()
        defer { running.shutDown() }
        let client = try TestClient(path: running.path)
        client.send(#"{"id":1,"#)
        usleep(30_000)
        client.send(#""op":"sta"#)
        usleep(30_000)
        client.send("tus\"}\n")
        #expect(client.readLine() == #"echo:{"id":1,"op":"status"}"#)
        let lines = running.handler.snapshot().filter { if case .line = $0 { true } else { false } }
        #expect(lines.count == 1)
    }

    @Test("many lines in one write are all delivered, in order")
    func manyLinesInOneWrite() throws {
        let running = try RunningServer()
        defer { running.shutDown() }
        let client = try TestClient(path: running.path)
        client.send((0..<200).map { "request \($0)\r\n" }.joined())
        for index in 0..<200 {
            #expect(client.readLine() == "echo:request \(index)")
        }
    }

    @Test("an oversized line gets the rejection line, then the end; others are still served")
    func oversizedLine() throws {
        let running = try RunningServer()
        defer { running.shutDown() }
        let bystander = try TestClient(path: running.path)
        bystander.send("before\n")
        #expect(bystander.readLine() == "echo:before")

        let offender = try TestClient(path: running.path)
        offender.send("fine\n")
        offender.send(String(repeating: "a", count: 70_000) + "\n")
        let (lines, end) = offender.readToEnd()
        #expect(lines == ["echo:fine", "rejected:lineTooLong:65536"])
        #expect(end == .endOfFile || end == .reset)

        bystander.send("after\n")
        #expect(bystander.readLine() == "echo:after")
        let events = running.handler.snapshot()
        #expect(
            events.contains { if case .rejected(_, .lineTooLong(limit: 65536)) = $0 { true } else { false } })
        #expect(!events.contains { if case .line(_, let line) = $0 { line.hasPrefix("aaa") } else { false } })
    }

    @Test("a watcher that never reads is dropped as too slow; others stay prompt")
    func slowReaderIsDropped() throws {
        let running = try RunningServer()
        defer { running.shutDown() }
        let sluggard = try TestClient(path: running.path)
        sluggard.send("watch\n")
        let responsive = try TestClient(path: running.path)
        responsive.send("ping\n")
        #expect(responsive.readLine() == "echo:ping")
        #expect(eventually { running.handler.snapshot().contains(.line(ClientID(rawValue: 1), "watch")) })

        // 100 events of 100 KiB = 10 MB pushed from another thread, as the archiver would.
        let event = #"{"event":"meter","pad":""# + String(repeating: "x", count: 100 * 1024) + #""}"#
        let server = running.server
        let handler = running.handler
        let producer = Thread {
            for _ in 0..<100 {
                server.post {
                    for watcher in handler.watchers { server.send(event, to: watcher) }
                }
                usleep(500)
            }
        }
        producer.start()

        var slowest = 0.0
        for index in 0..<30 {
            let start = SystemClock.monotonicSeconds()
            responsive.send("ping \(index)\n")
            #expect(responsive.readLine() == "echo:ping \(index)")
            slowest = max(slowest, SystemClock.monotonicSeconds() - start)
            usleep(2_000)
        }
        #expect(slowest < 0.5, "slowest round trip \(slowest) s")
        #expect(
            eventually { running.handler.snapshot().contains(.rejected(ClientID(rawValue: 1), .tooSlow)) })
        // When it reads at last: what the socket held, the rest of a line, the line that says why.
        let (lines, end) = sluggard.readToEnd()
        #expect(end == .endOfFile)
        #expect(lines.last == "rejected:tooSlow")
        #expect(lines.reduce(0) { $0 + $1.utf8.count } < 10 * 1024 * 1024)
        #expect(eventually { running.handler.snapshot().contains(.disconnected(ClientID(rawValue: 1))) })
    }

    @Test("a half-closed client gets all its replies, then the end")
    func halfClosedClient() throws {
        let running = try RunningServer()
        defer { running.shutDown() }
        let client = try TestClient(path: running.path)
        client.send("one\ntwo\nthree\nfour\nfive")  // the last line is unterminated
        client.shutdownWrite()
        let (lines, end) = client.readToEnd()
        #expect(lines == ["echo:one", "echo:two", "echo:three", "echo:four", "echo:five"])
        #expect(end == .endOfFile)
    }

    @Test("binary garbage does not crash the server; invalid UTF-8 becomes U+FFFD")
    func binaryGarbage() throws {
        let running = try RunningServer()
        defer { running.shutDown() }
        var generator = SystemRandomNumberGenerator()
        for round in 0..<5 {
            let vandal = try TestClient(path: running.path, receiveTimeout: 0.2)
            var bytes = (0..<(48 * 1024)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if round == 4 { bytes = [UInt8](repeating: 0, count: 100_000) }  // NULs, no newline
            vandal.send(bytes: bytes)
            vandal.send(bytes: [0x0A, 0xFF, 0xFE, 0x41, 0xC3, 0x0A, 0xED, 0xA0, 0x80, 0x0A])
            _ = vandal.drainToEnd()
        }
        let client = try TestClient(path: running.path)
        client.send(bytes: [0xFF, 0xFE, 0x41, 0x0A])
        #expect(client.readLine() == "echo:\u{FFFD}\u{FFFD}A")
        #expect(
            running.handler.snapshot().contains {
                if case .line(_, "\u{FFFD}\u{FFFD}A\u{FFFD}") = $0 { true } else { false }
            })
    }

    @Test("a client that vanishes while replies are queued costs no SIGPIPE")
    func vanishingClient() throws {
        let running = try RunningServer { handler in
            handler.onLine = { handler, client, line in
                // Large replies, so that some are still queued when the peer is gone.
                handler.server.send(String(repeating: "r", count: 16 * 1024), to: client)
            }
        }
        defer { running.shutDown() }
        for _ in 0..<5 {
            let quitter = try TestClient(path: running.path)
            quitter.send(String(repeating: "request\n", count: 500))
            usleep(20_000)
        }  // each closes here with unread replies; the server's next send gets EPIPE
        let client = try TestClient(path: running.path)
        client.send("still alive?\n")
        #expect(client.readLine()?.count == 16 * 1024)
        #expect(
            eventually {
                running.handler.snapshot().filter { $0 == .disconnected(ClientID(rawValue: 5)) }.count == 1
            })
    }

    @Test("post() from another thread runs the work on the control thread")
    func postRunsOnControlThread() throws {
        let running = try RunningServer()
        defer { running.shutDown() }
        let onControlThread = Mutex<[Bool]>([])
        let handler = running.handler
        let server = running.server
        let finished = runOnThreads(4) { _ in
            for _ in 0..<25 {
                server.post {
                    let control = handler.controlThread.withLock { $0 }
                    let same = control.map { pthread_equal($0, pthread_self()) != 0 } ?? false
                    onControlThread.withLock { $0.append(same) }
                }
            }
        }
        #expect(finished)
        #expect(eventually { onControlThread.withLock { $0.count } == 100 })
        #expect(onControlThread.withLock { $0.allSatisfy { $0 } })
    }

    @Test("stop() from another thread makes run return; open clients see the end")
    func stopEndsRun() throws {
        let running = try RunningServer()
        let client = try TestClient(path: running.path)
        client.send("hi\n")
        #expect(client.readLine() == "echo:hi")
        #expect(running.shutDown())
        #expect(client.readLine() == nil)
        #expect(client.end == .endOfFile)
        #expect(running.handler.snapshot().last == .disconnected(ClientID(rawValue: 1)))
    }

    @Test("ticks arrive about every 100 ms")
    func ticks() throws {
        let running = try RunningServer()
        defer { running.shutDown() }
        #expect(running.waitUntilRunning())
        usleep(550_000)
        let count = running.handler.ticks.load(ordering: .relaxed)
        #expect((3...7).contains(count), "\(count) ticks in 0.55 s")
    }

    @Test("quiet (no client, the handler wants no frequent ticks): a tick each quietTickInterval; a client brings them back")
    func quietTicks() throws {
        let running = try RunningServer(limits: .init(tickInterval: 0.05, quietTickInterval: 0.4)) { handler in
            handler.frequentTicks.store(false, ordering: .relaxed)
        }
        defer { running.shutDown() }
        #expect(running.waitUntilRunning())
        let handler = running.handler
        usleep(100_000)
        let quietStart = handler.ticks.load(ordering: .relaxed)
        usleep(1_000_000)
        let quiet = handler.ticks.load(ordering: .relaxed) - quietStart
        #expect((1...4).contains(quiet), "\(quiet) quiet ticks in 1 s (one each 0.4 s)")

        // A connected client: every 50 ms again, from the connection on.
        do {
            let client = try TestClient(path: running.path)
            client.send("hi\n")
            #expect(client.readLine() == "echo:hi")
            let connectedStart = handler.ticks.load(ordering: .relaxed)
            usleep(500_000)
            let connected = handler.ticks.load(ordering: .relaxed) - connectedStart
            #expect((5...13).contains(connected), "\(connected) ticks in 0.5 s with a client connected")
        }

        // No client, but the handler polls something: frequent as well.
        #expect(eventually { handler.snapshot().last == .disconnected(ClientID(rawValue: 1)) })
        handler.frequentTicks.store(true, ordering: .relaxed)
        usleep(450_000)  // the quiet tick that was due reads the new answer
        let pollingStart = handler.ticks.load(ordering: .relaxed)
        usleep(500_000)
        let polling = handler.ticks.load(ordering: .relaxed) - pollingStart
        #expect((5...13).contains(polling), "\(polling) ticks in 0.5 s while the handler wants them")
    }

    @Test("close(afterFlush:) delivers the queued goodbye, then the end")
    func closeAfterFlush() throws {
        let running = try RunningServer { handler in
            handler.onLine = { handler, client, line in
                handler.server.send("goodbye", to: client)
                handler.server.close(client, afterFlush: true)
                handler.server.send("dropped", to: client)
            }
        }
        defer { running.shutDown() }
        let client = try TestClient(path: running.path)
        client.send("bye\nignored\n")
        let (lines, end) = client.readToEnd()
        #expect(lines == ["goodbye"])
        #expect(end == .endOfFile)
    }

    @Test("the client beyond maxClients gets the rejection line; the others carry on")
    func tooManyClients() throws {
        let running = try RunningServer(limits: .init(maxClients: 2))
        defer { running.shutDown() }
        let first = try TestClient(path: running.path)
        let second = try TestClient(path: running.path)
        #expect(eventually { running.handler.connectedClients().count == 2 })
        let third = try TestClient(path: running.path)
        let (lines, end) = third.readToEnd()
        #expect(lines == ["rejected:tooManyClients"])
        #expect(end == .endOfFile)
        first.send("a\n")
        second.send("b\n")
        #expect(first.readLine() == "echo:a")
        #expect(second.readLine() == "echo:b")
        #expect(running.handler.snapshot().contains(.rejected(ClientID(rawValue: 3), .tooManyClients)))
        #expect(!running.handler.connectedClients().contains(ClientID(rawValue: 3)))
    }

    @Test("a user who is not exempt holds at most maxClientsPerUser; the reserved slots stay for the exempt")
    func connectionsPerUser() throws {
        let running = try RunningServer(limits: .init(maxClients: 6, reservedClients: 2, maxClientsPerUser: 3)) {
            $0.exemptByDefault = false
        }
        defer { running.shutDown() }
        let uid = getuid()
        let kept = try (0..<3).map { _ in try TestClient(path: running.path) }
        #expect(eventually { running.handler.connectedClients().count == 3 })
        let fourth = try TestClient(path: running.path)
        let (lines, end) = fourth.readToEnd()
        #expect(lines == ["rejected:tooManyClientsOfUser:\(uid):3"])
        #expect(end == .endOfFile)
        for (index, client) in kept.enumerated() {
            client.send("still \(index)\n")
            #expect(client.readLine() == "echo:still \(index)")
        }
        // One leaves: the uid may connect again.
        kept[0].hangUp()
        #expect(eventually { running.handler.snapshot().contains(.disconnected(ClientID(rawValue: 1))) })
        let again = try TestClient(path: running.path)
        again.send("back\n")
        #expect(again.readLine() == "echo:back")
    }

    @Test("the non-exempt share ends where the reserved slots begin; the exempt take them")
    func reservedSlots() throws {
        let running = try RunningServer(limits: .init(maxClients: 4, reservedClients: 2, maxClientsPerUser: 10)) {
            $0.exemptByDefault = false
        }
        defer { running.shutDown() }
        let ordinary = try (0..<2).map { _ in try TestClient(path: running.path) }
        #expect(eventually { running.handler.connectedClients().count == 2 })
        let third = try TestClient(path: running.path)
        #expect(third.readToEnd().0 == ["rejected:tooManyClients"])
        // The same peer, now exempt (as an administrator would be): it gets the reserved slots.
        running.server.post { running.handler.exemptByDefault = true }
        #expect(running.waitUntilRunning())
        let admins = try (0..<2).map { _ in try TestClient(path: running.path) }
        for (index, client) in (ordinary + admins).enumerated() {
            client.send("x\(index)\n")
            #expect(client.readLine() == "echo:x\(index)")
        }
        let fifth = try TestClient(path: running.path)
        #expect(fifth.readToEnd().0 == ["rejected:tooManyClients"])
    }

    @Test("non-reading watchers of one user are cut, slowest first, once the user's queued output passes its budget")
    func outputBudgetPerUser() throws {
        let limits = ControlServer.Limits(
            maxClients: 40, maxPendingOutputBytesPerUser: 1 << 20, maxPendingOutputBytesTotal: 4 << 20)
        let running = try RunningServer(limits: limits) { $0.exemptByDefault = false }
        defer { running.shutDown() }
        let uid = getuid()
        var sluggards: [TestClient] = []
        for _ in 0..<8 {
            let client = try TestClient(path: running.path, receiveBuffer: 4096)
            client.send("watch\n")
            #expect(client.readLine() == "watching")
            sluggards.append(client)
        }
        // 400 events of 10 KiB to each: 32 MB if nothing were cut.
        let event = #"{"event":"meter","pad":""# + String(repeating: "x", count: 10 * 1024) + #""}"#
        let server = running.server
        let handler = running.handler
        for _ in 0..<400 {
            server.post { for watcher in handler.watchers { server.send(event, to: watcher) } }
        }
        #expect(running.waitUntilRunning())
        // The budget is judged as output is queued and flushed, on the server's later turns: the
        // last watchers may be cut after the posted sends have all run.
        var cut: [ServerEvent] = []
        let allCut = eventually(timeout: 10) {
            cut = running.handler.snapshot().filter {
                if case .rejected(_, .unreadOverUserBudget(uid: uid, limit: 1 << 20)) = $0 { true } else { false }
            }
            return cut.count == 8
        }
        #expect(allCut, "every watcher that never reads is cut: \(cut.count)")
        for client in sluggards {
            let (lines, end) = client.readToEnd()
            #expect(end == .endOfFile)
            #expect(lines.last == "rejected:unreadOverUserBudget:\(uid):\(1 << 20)")
            // What the socket held, plus at most the budget: never the 4 MB of the old limit.
            let bytes = lines.reduce(0) { $0 + $1.utf8.count + 1 }
            #expect(bytes < (1 << 20) + 512 * 1024, "\(bytes) bytes reached one watcher")
        }
    }

    @Test("an incomplete line kept too long is rejected; a slow but steady client is not")
    func incompleteLineTimeout() throws {
        let running = try RunningServer(limits: .init(incompleteLineTimeout: 0.3))
        defer { running.shutDown() }
        let dawdler = try TestClient(path: running.path)
        let steady = try TestClient(path: running.path)
        dawdler.send(#"{"id":1,"op""#)
        for index in 0..<6 {
            steady.send("par")
            usleep(100_000)
            steady.send("t \(index)\n")
            #expect(steady.readLine() == "echo:part \(index)")
        }
        let (lines, end) = dawdler.readToEnd()
        #expect(lines == ["rejected:tooSlow"])
        #expect(end == .endOfFile)
        steady.send("still here\n")
        #expect(steady.readLine() == "echo:still here")
    }

    @Test("client IDs increase and are never reused")
    func clientIDsIncrease() throws {
        let running = try RunningServer()
        defer { running.shutDown() }
        for _ in 0..<3 {
            let client = try TestClient(path: running.path)
            client.send("x\n")
            _ = client.readLine()
        }
        #expect(eventually { running.handler.connectedClients().count == 3 })
        #expect(running.handler.connectedClients() == [1, 2, 3].map(ClientID.init(rawValue:)))
        #expect(ClientID(rawValue: 7).description == "client#7")
    }

    @Test("a watched signal reaches the handler on the control thread")
    func signalReachesHandler() throws {
        let running = try RunningServer(signals: [SIGUSR1])
        defer { running.shutDown() }
        // run() blocks SIGUSR1 on the control thread before its loop; after that, a signal
        // aimed at that thread stays pending and is read from the signalfd.
        #expect(running.waitUntilRunning())
        let thread = try #require(running.handler.controlThread.withLock { $0 })
        #expect(pthread_kill(thread, SIGUSR1) == 0)
        #expect(eventually { running.handler.snapshot().contains(.signal(SIGUSR1)) })
        #expect(Signals.name(SIGTERM) == "SIGTERM")
    }
}

@Suite("ControlServer listener")
struct ListenerTests {
    @Test("a second bindListener on a live socket throws alreadyRunning")
    func liveSocketIsNotStolen() throws {
        let directory = makeTemporaryDirectory()
        defer { removeTree(directory) }
        let path = directory + "/control.sock"
        let fd = try ControlServer.bindListener(path: path)
        defer { close(fd) }
        #expect(throws: ControlServer.ListenerError.alreadyRunning(path: path)) {
            try ControlServer.bindListener(path: path)
        }
        #expect(
            ControlServer.ListenerError.alreadyRunning(path: path).description
                == "another recd is running at \(path)")
    }

    @Test("a stale socket file is replaced; parent directories are created; mode is applied")
    func staleSocketIsReplaced() throws {
        let directory = makeTemporaryDirectory()
        defer { removeTree(directory) }
        try #require(mkdir(directory + "/run", 0o755) == 0)
        let path = directory + "/run/control.sock"
        // A dead daemon's socket: bound, never listening, closed without unlink.
        let stale = try UnixSocket.make()
        try UnixSocket.bind(stale, path: path)
        close(stale)
        #expect(try FileSystem.kind(of: path) == .socket)

        let fd = try ControlServer.bindListener(path: path, mode: 0o600)
        defer { close(fd) }
        _ = try TestClient(path: path)  // connects: the new socket listens
        var status = stat()
        #expect(stat(path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600)

        let nested = directory + "/a/b/control.sock"
        let nestedFD = try ControlServer.bindListener(path: nested)
        defer { close(nestedFD) }
        #expect(stat(nested, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o660)
        #expect(stat(directory + "/a/b", &status) == 0)
        #expect(status.st_mode & S_IFMT == S_IFDIR)
        #expect(status.st_mode & 0o700 == 0o700)
    }

    @Test("a regular file in the way is not deleted; a too-long path is refused")
    func obstacles() throws {
        let directory = makeTemporaryDirectory()
        defer { removeTree(directory) }
        let path = directory + "/control.sock"
        try AtomicFile.write("precious", to: path)
        #expect(throws: ControlServer.ListenerError.notASocket(path: path)) {
            try ControlServer.bindListener(path: path)
        }
        #expect(try AtomicFile.read(path) == Array("precious".utf8))

        let long = directory + "/" + String(repeating: "n", count: 120)
        do {
            _ = try ControlServer.bindListener(path: long)
            Issue.record("a 140-byte socket path was accepted")
        } catch {
            guard case .system(let system) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(system.errno == .nameTooLong)
        }
    }

    @Test("no systemd socket without LISTEN_FDS")
    func noSocketActivation() {
        unsetenv("LISTEN_FDS")
        #expect(ControlServer.listenerFromSystemd() == nil)
    }
}
