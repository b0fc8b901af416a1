// What the three commands share once active: connecting, the ready line, waiting for the
// end, and --rate-check. Main thread only.

import Platform

/// How a run ended.
enum StopReason {
    /// --seconds worth of frames went through.
    case finished
    case signal(Int32)
    /// The server went away or dropped us.
    case serverGone
}

extension SignalClient {
    /// Connects our port i to `destinations[i]` (play) or `sources[i]` to our port i
    /// (capture); nil entries are skipped.
    func connect(ports: [OpaquePointer], to peers: [String?], direction: PortDirection)
        throws(Failure)
    {
        for (port, peer) in zip(ports, peers) {
            guard let peer else { continue }
            let ours = fullName(of: port)
            switch direction {
            case .output: try connect(source: ours, destination: peer)
            case .input: try connect(source: peer, destination: ours)
            }
        }
    }

    /// Prints `ready CLIENT:port1,CLIENT:port2` to stdout.
    func announceReady(ports: [OpaquePointer]) {
        Console.out("ready " + ports.map { fullName(of: $0) }.joined(separator: ","))
    }

    /// Waits for a stop signal, the server's loss, or `finished()`; prints the first
    /// frame's time as soon as `firstFrameTime()` knows it (-1: not yet).
    func waitForStop(
        signals: StopSignals, finished: () -> Bool, firstFrameTime: () -> Int = { -1 }
    ) -> StopReason {
        var reported = false
        var stopSignal: Int32?
        stopSignal = signals.waitUntil {
            if !reported, case let time = firstFrameTime(), time >= 0 {
                let micros = microseconds(ofFrame: UInt32(truncatingIfNeeded: time))
                Console.error("first-frame-time=\(time) first-frame-usecs=\(micros)")
                reported = true
            }
            return finished() || serverGone
        }
        if let stopSignal { return .signal(stopSignal) }
        return serverGone ? .serverGone : .finished
    }
}

/// --rate-check: JACK frame time against CLOCK_MONOTONIC, from `init` to `measure`.
struct RateCheck {
    private let nominalRate: Int
    private let startFrames: UInt32
    private let startSeconds: Double

    init(client: SignalClient) {
        nominalRate = client.sampleRate
        startFrames = client.frameTime
        startSeconds = SystemClock.monotonicSeconds()
    }

    /// The check's result, to report once the run's own report is out.
    struct Outcome {
        var line: String
        var failure: Failure?

        /// Prints the result line; throws when the rate is more than 1% off or changed.
        func report() throws(Failure) {
            Console.error(line)
            if let failure { throw failure }
        }
    }

    func measure(client: SignalClient) -> Outcome {
        let frames = Double(client.frameTime &- startFrames)
        let seconds = SystemClock.monotonicSeconds() - startSeconds
        let rate = client.sampleRate
        guard rate == nominalRate else {
            return Outcome(
                line: "rate-check nominal=\(nominalRate) now=\(rate) FAILED",
                failure: .jack("the server's sample rate changed from \(nominalRate) to \(rate)"))
        }
        guard seconds >= 0.5 else {
            return Outcome(
                line: "rate-check nominal=\(nominalRate) seconds=\(format(seconds, 3)) too-short",
                failure: nil)
        }
        let measured = frames / seconds
        let deviation = (measured / Double(nominalRate) - 1) * 1e6
        let ok = abs(deviation) <= 10_000
        return Outcome(
            line: "rate-check nominal=\(nominalRate) measured=\(format(measured, 1)) "
                + "deviation-ppm=\(Int(deviation.rounded())) seconds=\(format(seconds, 3)) "
                + (ok ? "ok" : "FAILED"),
            failure: ok
                ? nil
                : .jack("the server runs at \(format(measured, 1)) frames/s, not \(nominalRate)"))
    }
}

/// `value` with `digits` decimals (no Foundation).
func format(_ value: Double, _ digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    let whole = Int(scaled / scale)
    let fraction = Int(scaled - Double(whole) * scale)
    var text = (value < 0 && scaled != 0 ? "-" : "") + String(whole)
    if digits > 0 {
        let digitsText = String(fraction)
        text += "." + String(repeating: "0", count: digits - digitsText.count) + digitsText
    }
    return text
}

/// The ports' frame budget for --seconds S at `rate` (at least one frame).
func frameLimit(seconds: Double?, rate: Int) -> Int {
    guard let seconds else { return Int.max }
    return max(1, Int((seconds * Double(rate)).rounded()))
}
