// libFuzzer target: what the multicast network and pw-dump hand recd, through NetworkAudio's
// parsers and the RTP monitor's decisions (RTPMonitorCore: the monitor without its sockets).
// Every input goes whole through the SAP parser, the SDP parser, the RTP header parser and the
// pw-dump reader (so the real packets and dump of fuzz/corpus/network are read as they are); then
// it is played to a monitor as a script: the first two bytes the length of an announcement from
// the sender (10.231.0.2, whose origin the monitor wants), then records of
// [flags][time step, 2 bytes][length][bytes]: an announcement or a packet of the stream, from
// the sender, another host or an unknown address, `time step` × 16 µs after the one before.
// Checked: what a parser gives is within its bounds, the stream's counts only grow (a late packet
// moves one from lost to received), its network loss
// list stays bounded, and the network losses are well-formed.
// Built and run by fuzz/run (swiftc -sanitize=fuzzer,address); not part of the package.
import Platform

@testable import NetworkAudio

/// A failed check stops the fuzzer with its message (precondition's is dropped at -O).
func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

let senderOrigin = "root 4005561041 0 IN IP4 10.231.0.2"
let sender = IPAddress(high: 0, low: 0xFFFF_0AE7_0002)
let otherHost = IPAddress(high: 0, low: 0xFFFF_0AE7_0003)
let wanted = [
    senderOrigin: RTPMonitor.Wanted(
        client: "studio2", session: "studio2", address: "10.231.0.2", latencyMilliseconds: 100),
    "- 1 0 IN IP4 0.0.0.0": RTPMonitor.Wanted(client: "anon", session: "anon", address: nil, latencyMilliseconds: 20),
]

@_cdecl("LLVMFuzzerTestOneInput")
public func networkFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    if let announcement = SAPAnnouncement(bytes) { checkSession(announcement.session) }
    if let session = SDPStreamDescription.parse(bytes) { checkSession(session) }
    _ = RTPHeader(bytes)
    if let sessions = PipeWireDump.rtpStreams(json: Array(bytes)) {
        for session in sessions.values {
            check(session.latencyMilliseconds.map { (1...10_000).contains($0) } ?? true, "latency \(session)")
        }
    }
    play(bytes)
    return 0
}

func checkSession(_ session: SDPStreamDescription) {
    check(session.port > 0, "port 0")
    check(IPAddress(parsing: session.group)?.isMulticast == true, "group \(session.group)")
    check(session.packetMilliseconds.map { $0 >= 0.1 && $0 <= 1000 } ?? true, "ptime \(session)")
    check(session.clockRate.map { (1...768_000).contains($0) } ?? true, "rate \(session)")
    // (Each byte that is not UTF-8 becomes U+FFFD: 3 bytes.)
    check(session.origin.utf8.count <= 3 * SDPStreamDescription.maximumLineBytes, "origin longer than a line")
    check(session.originAddress.map { !$0.isUnspecified } ?? true, "unspecified origin address")
}

/// The input as a script for a monitor (see the top of this file).
func play(_ bytes: UnsafeRawBufferPointer) {
    var core = RTPMonitorCore(maximumStreams: 2)
    var now = 1_000_000
    _ = core.apply(wanted, now: now)
    guard bytes.count >= 2 else { return }
    let sapLength = min(Int(bytes[0]) << 8 | Int(bytes[1]), bytes.count - 2)
    _ = core.announcement(
        UnsafeRawBufferPointer(rebasing: bytes[2..<(2 + sapLength)]), size: sapLength, from: sender, now: now)
    var index = 2 + sapLength
    var before: RTPStreamFacts?
    while index + 4 <= bytes.count {
        let flags = bytes[index]
        now += (Int(bytes[index + 1]) << 8 | Int(bytes[index + 2])) * 16
        let length = min(Int(bytes[index + 3]), bytes.count - index - 4)
        let datagram = UnsafeRawBufferPointer(rebasing: bytes[(index + 4)..<(index + 4 + length)])
        index += 4 + length
        let source: IPAddress? = [sender, otherHost, nil, sender][Int(flags >> 1) & 3]
        if flags & 1 == 1 {
            _ = core.announcement(datagram, size: flags & 0x80 == 0 ? length : length + 1, from: source, now: now)
        } else {
            core.packet(
                client: flags & 0x40 == 0 ? "studio2" : "anon", datagram, from: source, arrivalMicros: now,
                wallNanoseconds: Int64(now) * 1000)
        }
        _ = core.takeNotes()
        guard let facts = core.facts["studio2"] else {
            before = nil
            continue
        }
        if let before, before.group == facts.group, before.port == facts.port {
            // A late packet moves one from lost to received: their sum and the received only grow.
            check(
                facts.packets >= before.packets && facts.packets + facts.lost >= before.packets + before.lost,
                "counts went back: \(before) → \(facts)")
            check(facts.lossCount >= before.lossCount && facts.ignored >= before.ignored, "network losses went back")
        }
        check(facts.packets >= 0 && facts.lost >= 0 && facts.duplicates >= 0, "negative counts \(facts)")
        check(facts.recentLosses.count <= RTPStreamFacts.keptLosses, "network loss list over its bound")
        check(facts.recentLosses.allSatisfy { $0.missingMicros > 0 }, "an empty network loss \(facts)")
        for loss in facts.losses(overlapping: 0..<Int.max, now: now) {
            check(!loss.isEmpty && loss.lowerBound >= 0, "network loss \(loss)")
        }
        before = facts
    }
}
