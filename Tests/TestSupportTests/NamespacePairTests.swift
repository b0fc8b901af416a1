// The two-box network of the netjack2 tests is real: a multicast datagram sent in one namespace
// arrives in the other (what netjack2's discovery needs), not while the link is down, and again
// once it is up (the route added back); nothing is left behind.
import Foundation
import TestSupport
import Testing

@Suite(
    "two network namespaces joined by a veth pair", .serialized,
    .enabled(if: NamespacePair.permitted, Comment(rawValue: NamespacePair.skipReason)))
struct NamespacePairTests {
    /// netjack2's discovery group and port.
    static let group = "225.3.19.154"
    static let port = 19_099

    /// Sends one datagram from `from` to the multicast group while `to` listens on its veth end
    /// for up to `wait` seconds; whether it arrived.
    static func multicastArrives(_ pair: NamespacePair, from: NamespacePair.Side, to: NamespacePair.Side, wait: Double)
        throws -> Bool
    {
        let python = try ExternalTools.path("python3")
        let listen = """
            import socket, struct, sys
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("", \(port)))
            s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                struct.pack("4s4s", socket.inet_aton("\(group)"), socket.inet_aton("\(pair.addresses[to.rawValue])")))
            s.settimeout(\(wait))
            print("listening", flush=True)
            try:
                print(s.recv(100).decode(), flush=True)
            except socket.timeout:
                print("nothing", flush=True)
            """
        let listener = try pair.process(in: to, python, ["-c", listen])
        let output = Pipe()
        listener.standardOutput = output
        try listener.run()
        // Sent until the listener has joined (its first line), then once more.
        let send = """
            import socket
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
            try:
                s.sendto(b"hello from \(pair.name(from))", ("\(group)", \(port)))
            except OSError as e:
                print(e)
            """
        let reader = output.fileHandleForReading
        _ = reader.availableData  // "listening"
        let sender = try pair.process(in: from, python, ["-c", send])
        sender.standardOutput = FileHandle.nullDevice
        try sender.run()
        sender.waitUntilExit()
        listener.waitUntilExit()
        let heard = String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
        return heard.contains("hello from \(pair.name(from))")
    }

    @Test(
        "a multicast datagram crosses the veth pair; not while a link is down; again once it is up (the route back); the namespaces go with the pair"
    )
    func multicastAcrossTheLink() throws {
        var names: [String] = []
        do {
            let pair = try NamespacePair("nstesta", "nstestb")
            names = pair.names
            for side in NamespacePair.Side.allCases {
                #expect(pair.routes(side).contains(NamespacePair.multicastRoute), "\(pair.routes(side))")
            }
            #expect(try Self.multicastArrives(pair, from: .second, to: .first, wait: 2))

            try pair.setLink(.second, up: false)
            #expect(
                !pair.routes(.second).contains(NamespacePair.multicastRoute),
                "down drops the route: \(pair.routes(.second))")
            #expect(try !Self.multicastArrives(pair, from: .second, to: .first, wait: 0.5))

            try pair.setLink(.second, up: true)
            #expect(pair.routes(.second).contains(NamespacePair.multicastRoute), "\(pair.routes(.second))")
            // A veth end just up may need a moment for its carrier.
            #expect(
                try eventually(timeout: 5) { try Self.multicastArrives(pair, from: .second, to: .first, wait: 0.5) })
        }
        let left = try ExternalTools.run("ip", ["netns", "list"]).stdout
        for name in names { #expect(!left.contains(name), "\(name) left behind: \(left)") }
    }

    @Test("a pair of the same names left by a killed run is replaced, not an error")
    func staleNamesAreReplaced() throws {
        _ = try ExternalTools.run("ip", ["netns", "add", "recd-test-net-nstestc"])
        let pair = try NamespacePair("nstestc", "nstestd")
        #expect(pair.routes(.first).contains(NamespacePair.multicastRoute))
        pair.remove()
        #expect(!(try ExternalTools.run("ip", ["netns", "list"]).stdout.contains("recd-test-net-nstestc")))
    }

    @Test("a pinned neighbour entry is permanent and outlives the far end's link going down")
    func pinnedNeighbour() throws {
        let pair = try NamespacePair("nstestd", "nsteste")
        defer { pair.remove() }
        try pair.pinNeighbour(on: .first)
        let entry = { pair.neighbours(.first).split(separator: "\n").first { $0.hasPrefix(pair.addresses[1] + " ") } }
        #expect(entry()?.contains("PERMANENT") == true, "\(pair.neighbours(.first))")
        try pair.setLink(.second, up: false)
        // The far end down: the first side's carrier goes; a resolved entry would be flushed.
        usleep(200_000)
        #expect(entry()?.contains("PERMANENT") == true, "\(pair.neighbours(.first))")
        try pair.setLink(.second, up: true)
        #expect(entry()?.contains("PERMANENT") == true, "\(pair.neighbours(.first))")
    }
}
