// Audio from another box: a netjack2 satellite (`jackd -d net`) in one network namespace joins the
// logger's jackd (`jack_load netmanager`) in another across a veth pair, its counter deck plays
// into the satellite's system:playback ports, and recd records them as the `[port]` netmanager's
// client gives (`studio2:from_slave_1,2`). The link is cut for 3 s mid-recording: what recd does is
// what it does for any input that goes away (a routeChange, the segment ends,
// the recorder comes back by itself in a new one), and the test measures what netjack2 made of
// the cut (docs/network-audio.md). The real jackd2, recd, recctl, flac; no stand-ins.
//
// The recipe's two recds: the satellite is recorded by a recd of its own (a JACK client of its
// own), the logger's local programme by another, whose recording the cut must not touch (no
// stall: one JACK client waits for every client it reads from, and netmanager's client for a
// lost satellite stands still for 2 s).
//
// jackd pass only: it starts its own two servers, which PipeWire's libjack cannot reach.
import ControlProtocol
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite(
    "netjack2: a satellite's channels recorded across a veth pair", .serialized,
    .enabled(if: !TestServer.isPipeWire, Comment(rawValue: TestServer.startsItsOwnJackd)),
    .enabled(if: NamespacePair.permitted, Comment(rawValue: NamespacePair.skipReason)))
struct NetworkAudioTests {
    static let rate = 48_000
    static let period = 1024
    /// The satellite's name: its client on the logger's server.
    static let peer = "studio2"
    /// How long the link is down.
    static let cutSeconds = 3.0
    /// Recorded before the cut and after the recorder is back. The issue's 30 s adds nothing the
    /// counter check does not see in 2 s (every period is checked against the one before), and
    /// scripts/test is over its budget; RECD_LONG_TESTS=1 records about 30 s in all.
    static let stretchSeconds = ProcessInfo.processInfo.environment["RECD_LONG_TESTS"] == "1" ? 13.0 : 2.0

    /// The local programme's port: the only one of the recd that records it.
    static let localPort = """
        [port local]
        type = lineIn
        direction = input
        jack = localdeck:out_1, localdeck:out_2

        """

    /// The network recd's: both are there when it starts, so the later one, the satellite, is the
    /// last in; the logger declared for it (`record = studio`) has that port or nothing as its route.
    static let ports = localPort + """
        [port studio]
        type = lineIn
        direction = input
        jack = \(peer):from_slave_1, \(peer):from_slave_2

        """

    /// The network recd's logger: the satellite.
    static let remoteSession = """

        [session remote]
        category = record
        options = mixWithOthers
        priority = logger
        mic_usage = the studio's programme
        record = studio
        auto_resume = yes
        permission = granted

        """

    /// The local recd's logger: a deck on the logger's own server.
    static let localSession = """

        [session here]
        category = record
        options = mixWithOthers
        priority = logger
        mic_usage = the local deck
        record = local
        auto_resume = yes
        permission = granted

        """

    /// One decoded segment of a stereo counter, period by period (recd writes whole periods
    /// from a segment's first frame).
    struct CounterSegment {
        enum Period: Equatable {
            /// Both channels all zeros: nothing connected yet, or a satellite gone quiet.
            case zero
            /// Every frame the counter in order on both channels, from `position`.
            case counter(position: Int)
            /// Anything else: a period torn or foreign.
            case torn
        }
        let period: Int
        var frames = 0
        var periods: [Period] = []

        init(_ samples: [Int32], period: Int) {
            self.period = period
            frames = samples.count / 2
            func position(_ f: Int) -> Int { (28087 * Int(samples[f * 2] / 256 + 32768)) % 65536 }
            func fits(_ f: Int, _ n: Int) -> Bool {
                (0..<2).allSatisfy { c in samples[f * 2 + c] == Int32((counterK(n % 65536, c) - 32768) * 256) }
            }
            for start in stride(from: 0, to: frames, by: period) {
                let end = min(start + period, frames)
                if (start * 2..<end * 2).allSatisfy({ samples[$0] == 0 }) {
                    periods.append(.zero)
                    continue
                }
                let first = position(start)
                periods.append(
                    (start..<end).allSatisfy { fits($0, first + $0 - start) } ? .counter(position: first) : .torn)
            }
        }

        /// The periods that do not continue the counter period before them (the first counter
        /// period continues nothing and is not one), with what they are.
        var breaks: [(index: Int, period: Period)] {
            var result: [(Int, Period)] = []
            var expected: Int?
            for (index, entry) in periods.enumerated() {
                switch entry {
                case .zero: if expected != nil { result.append((index, entry)) }
                case .torn: result.append((index, entry))
                case .counter(let position):
                    if let expected, position != expected { result.append((index, entry)) }
                    expected = (position + period) % 65536
                }
            }
            return result
        }

        /// The first and the last counter period's index.
        var firstCounter: (index: Int, position: Int)? {
            periods.enumerated().lazy.compactMap { item -> (Int, Int)? in
                if case .counter(let position) = item.element { (item.offset, position) } else { nil }
            }.first
        }
        var lastCounter: Int? {
            periods.indices.last { if case .counter = periods[$0] { true } else { false } }
        }
    }

    /// A segment's START_TIME plus `frame` delivered frames and the gaps before them: when
    /// (wall clock) that frame was recorded.
    static func time(ofFrame frame: Int, start: Date, gaps: [(position: Int, length: Int)]) -> Date {
        let missing = gaps.filter { $0.position <= frame }.map(\.length).reduce(0, +)
        return start.addingTimeInterval(Double(frame + missing) / Double(rate))
    }

    /// How long after the deck played its first counter period (its cycle's start on jackd2's
    /// clock, µs: `deckFirstMicros`) recd received it: from the segment's first counter period, the
    /// frame played then being the latest whose position matches (so under 1.36 s).
    static func latency(
        _ segment: CounterSegment, start: Date, gaps: [(position: Int, length: Int)], deckFirstMicros: Double
    ) -> Double? {
        guard let first = segment.firstCounter else { return nil }
        let received = time(ofFrame: first.index * segment.period, start: start, gaps: gaps)
        let receivedMicros = (received.timeIntervalSince1970 + jackClockMinusWall()) * 1e6
        let playedIfInstant = Int(((receivedMicros - deckFirstMicros) * Double(rate) / 1e6).rounded())
        // Read in -1 period ..< 65536 - 1 period: the two clocks' estimates may put a frame
        // received in the cycle it was played a fraction of a millisecond before it.
        let frames = ((playedIfInstant - first.position + segment.period) % 65536 + 65536) % 65536 - segment.period
        return Double(frames) / Double(rate)
    }

    /// CPU seconds (user + system) a process has used.
    static func cpuSeconds(_ pid: Int32) -> Double { cpuSeconds(pid: pid, task: nil) }

    /// The same for one thread of it (`/proc/PID/task/TID/stat`).
    static func cpuSeconds(pid: Int32, task: Int32?) -> Double {
        let path = task.map { "/proc/\(pid)/task/\($0)/stat" } ?? "/proc/\(pid)/stat"
        guard let stat = try? String(contentsOfFile: path, encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // utime and stime are fields 14 and 15 of the line: 12 and 13 after the name.
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// jackd2's microsecond clock (jack_get_time) minus the wall clock, seconds. jackd2 reads
    /// CLOCK_MONOTONIC_RAW, not CLOCK_MONOTONIC: the two differ by what NTP has slewed since boot
    /// (265 ms on this machine, measured: the local deck's "latency" came out 265 ms with
    /// CLOCK_MONOTONIC, 0 with this).
    static func jackClockMinusWall() -> Double {
        var raw = timespec()
        clock_gettime(CLOCK_MONOTONIC_RAW, &raw)
        let wall = Date().timeIntervalSince1970
        return Double(raw.tv_sec) + Double(raw.tv_nsec) / 1e9 - wall
    }

    @Test(
        "a netjack2 satellite's counter recorded through a [port]: routes says netjack2 peer studio2; in order, latency measured; a 3 s link cut is a vanished input (routeChange noSuitableRouteForCategory for its declared logger, the segment ends) and the recorder comes back by itself; every file passes flac -t"
    )
    func satelliteThroughALinkCut() throws {
        let pair = try NamespacePair("logger", "studio")
        defer { pair.remove() }
        // The recipe's permanent neighbour entry for the satellite on the logger: without it the
        // rejoin after the cut took 10 s in 7 of 10 runs (netmanager's reply dropped with a
        // failed ARP resolution; docs/network-audio.md). RECD_TEST_NETJACK2_UNPINNED=1 leaves it
        // out, to see that again.
        let pinned = ProcessInfo.processInfo.environment["RECD_TEST_NETJACK2_UNPINNED"] != "1"
        if pinned { try pair.pinNeighbour(on: .first) }
        let master = try PrivateJack(period: Self.period, name: "recd-test-net-logger", namespace: (pair, .first))
        // netmanager with jackd2's defaults: multicast 225.3.19.154:19000, no auto-connection.
        // Unloaded before the server stops: jackd with netmanager loaded takes 6 to 17 s to stop.
        defer {
            // (jack_unload hung once for 10 minutes, after a satellite stopped: not waited for.)
            _ = try? runTool("jack_unload", ["netmanager", master.name], timeout: 10)
            master.stop(grace: 2)
        }
        let loaded = try runTool("jack_load", ["-s", master.name, "netmanager"])
        try #require(loaded.status == 0, "jack_load netmanager: \(loaded.stdout) \(loaded.stderr)")
        // The satellite: no audio from the logger (-C 0), two channels to it (-P 2), no MIDI;
        // -s keeps its deck's connections across the restart a lost master causes.
        let satellite = try PrivateJack(
            name: "recd-test-net-studio",
            driver: ["-d", "net", "-n", Self.peer, "-C", "0", "-P", "2", "-i", "0", "-o", "0", "-s"],
            namespace: (pair, .second))
        defer { satellite.stop(grace: 2) }
        let masterPid = try #require(master.process?.processIdentifier)
        let satellitePid = try #require(satellite.process?.processIdentifier)

        let deck = try SignalClient([
            "--server", satellite.name, "--name", "studiodeck", "play", "--ports", "out_1,out_2", "--signal", "counter",
            "--connect", "system:playback_1,system:playback_2",
        ])
        defer { deck.stop() }
        let local = try SignalClient([
            "--server", master.name, "--name", "localdeck", "play", "--ports", "out_1,out_2", "--signal", "counter",
        ])
        defer { local.stop() }
        #expect(deck.waitFor { $0.contains("first-frame-usecs=") })
        let deckFirstMicros = try #require(
            deck.lines.first { $0.contains("first-frame-usecs=") }
                .flatMap { $0.split(separator: "=").last }.flatMap { Double($0) }, "\(deck.output)")

        // Two recds, as the recipe says: the satellite's and the local programme's.
        let daemon = try Daemon(extraConfig: Self.remoteSession, ports: Self.ports, jackServer: master.name)
        let localDaemon = try Daemon(extraConfig: Self.localSession, ports: Self.localPort, jackServer: master.name)
        let watcher = try daemon.watch("remote")
        let recording = { (recd: Daemon) in
            (try? recd.recctl("--json", "status").json?["recorders"]?.arrayValue?.count) ?? 0
        }
        #expect(eventually(timeout: 10) { recording(daemon) == 1 && recording(localDaemon) == 1 }, "\(daemon.log)")
        let cpuStart = (Self.cpuSeconds(masterPid), Self.cpuSeconds(satellitePid), Date())

        // Where each port's audio comes from.
        let routes = try #require(try daemon.recctl("--json", "routes").json)
        let ports = try RoutesInfo(json: routes).ports
        let studio = try #require(ports.first { $0.name == "studio" })
        #expect(
            studio.origins == [
                PortOriginInfo(jack: "\(Self.peer):from_slave_1", origin: "netjack2", client: Self.peer),
                PortOriginInfo(jack: "\(Self.peer):from_slave_2", origin: "netjack2", client: Self.peer),
            ], "\(studio.origins)")
        #expect(ports.first { $0.name == "local" }?.origins.map(\.text) == ["local", "local"])
        let human = try daemon.recctl("routes").stdout
        #expect(human.contains("netjack2 peer \(Self.peer)"), "\(human)")
        print("netjack2: recctl routes\n\(human)")
        let reportedLatency = try daemon.recctl("--json", "session", "show", "remote").json?["actual"]?["inputLatency"]?
            .doubleValue

        usleep(UInt32(Self.stretchSeconds * 1e6))
        let cpuEnd = (Self.cpuSeconds(masterPid), Self.cpuSeconds(satellitePid), Date())
        try pair.setLink(.second, up: false)
        let cutAt = Date()
        usleep(UInt32(Self.cutSeconds * 1e6))
        try pair.setLink(.second, up: true)
        let upAt = Date()
        let events = watcher.waitFor(timeout: 15, RecoveryTests.recording("resumed"))
        let backAt = Date()
        func logs() -> String {
            "the logger's jackd:\n\(master.log.suffix(3000))\nthe satellite:\n\(satellite.log.suffix(3000))\nrecd:\n\(daemon.log.suffix(3000))"
        }
        print(
            "netjack2: the link was down \(upAt.timeIntervalSince(cutAt)) s; recording again \(backAt.timeIntervalSince(upAt)) s after it came up\(pinned ? "" : " (no permanent neighbour entry)")"
        )
        // The satellite announces itself every 1.02 s (SLAVE_INIT_TIMEOUT), netmanager answers at
        // once, recd resumes within a tenth of a second: 0.06 to 0.15 s measured here (the 3 s cut
        // ends just before an announcement), up to 1.3 s in bare runs. 10 s was the dropped reply.
        #expect(
            backAt.timeIntervalSince(upAt) < 2.5,
            "recording again \(backAt.timeIntervalSince(upAt)) s after the link came up; the logger's neighbours: \(pair.neighbours(.first))"
        )
        // The declared logger's route is its own port or nothing (`record = studio`): with the
        // port gone its record session has no input at all, noSuitableRouteForCategory.
        let change = events.first { $0["event"] == "routeChange" && $0["previousRoute"]?["inputs"] == ["studio"] }
        #expect(change?["reason"] == "noSuitableRouteForCategory", "\(events.map(\.jsonText))")
        #expect(change?["route"]?["inputs"] == [], "\(events.map(\.jsonText))")
        let stopped = events.first(where: RecoveryTests.recording("stopped"))
        #expect(stopped?["reason"] == "routeChange", "\(events.map(\.jsonText))")
        let resumed = try #require(events.first(where: RecoveryTests.recording("resumed")), "\(logs())")
        #expect(resumed["reason"] == "inputGone", "\(resumed.jsonText)")
        usleep(UInt32(Self.stretchSeconds * 1e6))
        let xruns = try daemon.xruns()
        try #require(daemon.recctl("record", "stop", "remote").status == 0)
        try #require(localDaemon.recctl("record", "stop", "here").status == 0)
        #expect(eventually { archiveFiles(daemon.directory + "/archive").allSatisfy { $0.hasSuffix(".flac") } })
        #expect(eventually { archiveFiles(localDaemon.directory + "/archive").allSatisfy { $0.hasSuffix(".flac") } })

        // Every file passes flac -t; the satellite's recording is two segments, the first ended by
        // the vanished input.
        let files = archiveFiles(daemon.directory + "/archive")
        let here = archiveFiles(localDaemon.directory + "/archive")
        for file in files + here { #expect(try flacTest(file), "flac -t \(file)") }
        let remote = files.filter { $0.split(separator: "/").last?.hasPrefix("remote-") == true }
        try #require(remote.count == 2, "\(files)")
        #expect(try metaflacTag(remote[0], "END_REASON") == "routeChange")
        #expect(try metaflacTag(remote[1], "RESUMED_AFTER") == "inputGone")

        // The counter arrives in order: each segment's periods continue one another but where
        // recd itself recorded a stall of the logger's graph (a GAPS entry: netjack2 then repeats
        // and skips periods while it catches up).
        let segments = try remote.map { CounterSegment(try decodeFLAC($0, bits: 24), period: Self.period) }
        let gaps = try remote.map { try metaflacTag($0, "GAPS").flatMap { TrueTimeEndToEndTests.parseGaps($0) } ?? [] }
        let starts = try remote.map { try #require(try PreRollEndToEndTests.startTime($0)) }
        for (index, segment) in segments.enumerated() {
            let name = remote[index].split(separator: "/").last!
            print(
                "netjack2: \(name): \(segment.frames) frames, gaps \(gaps[index]), breaks \(segment.breaks.map { "\($0.index):\($0.period)" })"
            )
            #expect(segment.firstCounter != nil && segment.lastCounter != nil, "\(name): no counter")
            // On this loaded 2-core machine netjack2 itself repeats or skips a period now and
            // then (a late packet), and for up to about 12 periods after each stall of the
            // logger's graph, which recd marks with a gap: that much and no more.
            let allowed = 4 + 16 * (gaps[index].count + xruns)
            #expect(segment.breaks.count <= allowed, "\(name): \(segment.breaks.count) periods out of order")
        }

        // Latency: when recd received the first counter period against when the satellite's
        // deck played it, both on jackd2's clock (the two jackds share it).
        let latency = try #require(
            Self.latency(segments[0], start: starts[0], gaps: gaps[0], deckFirstMicros: deckFirstMicros))
        print(
            "netjack2: latency \(latency * 1000) ms measured; JACK reports \(reportedLatency.map { $0 * 1000 } ?? -1) ms for the port"
        )
        // netjack2's -l 5 cycles of buffering and the cycle that carries the audio: 6 periods
        // (128 ms) measured; more than JACK's port latency (3.5 periods) says.
        #expect(latency > 0 && latency < 0.5, "latency \(latency) s")

        // The missing time: from the last counter period before the cut to the first after.
        // (The end of the last period: after its last frame, not counting a gap recd recorded
        // after it, at the segment's end: the stall of the lost satellite's last 2 s.)
        let lastBefore = Self.time(
            ofFrame: (segments[0].lastCounter! + 1) * Self.period - 1, start: starts[0], gaps: gaps[0]
        ).addingTimeInterval(1 / Double(Self.rate))
        let firstAfter = Self.time(
            ofFrame: segments[1].firstCounter!.index * Self.period, start: starts[1], gaps: gaps[1])
        let missing = firstAfter.timeIntervalSince(lastBefore)
        print(
            "netjack2: \(missing) s of the satellite missing for a \(upAt.timeIntervalSince(cutAt)) s cut; the cut came \(cutAt.timeIntervalSince(lastBefore)) s after the last counter period"
        )
        // The archive claims no audio from the satellite while the link was down: the last
        // counter period before was sent before the cut (received up to the latency and a period
        // later), the first after was recorded after the link came back.
        // Packets the satellite sent just before the cut that netmanager takes in only after the
        // logger's graph stood still (its ~2 s wait for the lost satellite, a gap recd records)
        // are played into that much later: that stall is allowed on top (measured on a fresh
        // machine: the last period came 2.42 s after the cut behind a 2.05 s stall).
        let periodSeconds = Double(Self.period) / Double(Self.rate)
        let lastFrame = (segments[0].lastCounter! + 1) * Self.period
        let stalled =
            Double(gaps[0].filter { $0.position < lastFrame && $0.length > Self.rate / 2 }.map(\.length).reduce(0, +))
            / Double(Self.rate)
        #expect(
            lastBefore.timeIntervalSince(cutAt) <= latency + 2 * periodSeconds + stalled,
            "the last period before the cut (the logger stalled \(stalled) s before it)")
        #expect(
            firstAfter > upAt, "the first period after: \(firstAfter.timeIntervalSince(upAt)) s after the link came up")
        #expect(missing >= Self.cutSeconds - periodSeconds, "missing \(missing) s")
        // And at most one announcement interval more than the cut, and a few periods (3.07 to
        // 3.16 s measured for 3.01 s cuts; 4.1 or 13.2 s before the pinned neighbour).
        #expect(missing <= upAt.timeIntervalSince(cutAt) + 1.3, "missing \(missing) s")

        // The local deck, recorded by the other recd: the satellite's loss does not touch it.
        let localFirstMicros = try #require(
            local.lines.first { $0.contains("first-frame-usecs=") }
                .flatMap { $0.split(separator: "=").last }.flatMap { Double($0) }, "\(local.output)")
        #expect(here.count == 1, "the local recording goes on: \(here)")
        for file in here {
            let localGaps = try metaflacTag(file, "GAPS").flatMap { TrueTimeEndToEndTests.parseGaps($0) } ?? []
            let segment = CounterSegment(try decodeFLAC(file, bits: 24), period: Self.period)
            let start = try #require(try PreRollEndToEndTests.startTime(file))
            let localLatency = Self.latency(segment, start: start, gaps: localGaps, deckFirstMicros: localFirstMicros)
            // No stall of the local recording across the cut: with one recd for both, its
            // recorders all stood still for the 2 s netmanager waited for the lost satellite
            // (2.016 to 2.047 s measured), a clockStall gap in the local segment. This loaded
            // machine may still stall a whole cycle or two now and then (tens of ms): a quarter
            // of a second is far from both.
            let long = localGaps.filter { $0.length > Self.rate / 4 }
            #expect(
                long.isEmpty,
                "the local recording stalled: gaps of \(long.map { Double($0.length) / Double(Self.rate) }) s")
            // And the counter runs on: every period continues the one before but where recd
            // recorded a gap of its own.
            #expect(
                segment.breaks.count <= localGaps.count,
                "\(segment.breaks.count) local periods out of order, \(localGaps.count) gaps")
            #expect(segment.frames > Int((2 * Self.stretchSeconds + Self.cutSeconds) * Double(Self.rate)))
            #expect(
                abs(localLatency ?? 1) < 2 * Double(Self.period) / Double(Self.rate),
                "the method's zero: \(localLatency ?? -1) s")
            print(
                "netjack2: local \(file.split(separator: "/").last!): gaps \(localGaps.map { Double($0.length) / Double(Self.rate) }) s, breaks \(segment.breaks.map { "\($0.index):\($0.period)" }), latency \((localLatency ?? -1) * 1000) ms (the method's zero)"
            )
        }

        let seconds = cpuEnd.2.timeIntervalSince(cpuStart.2)
        print(
            "netjack2: CPU over \(seconds) s, 2 remote channels: logger's jackd \((cpuEnd.0 - cpuStart.0) / seconds * 100) %, satellite's \((cpuEnd.1 - cpuStart.1) / seconds * 100) %"
        )
    }
}
