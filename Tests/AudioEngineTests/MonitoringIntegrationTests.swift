// Main/cue monitoring against the real jackd (dummy backend): two test clients play decks into
// the engine's input groups, a third listens behind the engine's output groups. Part of the
// serialized engine suite (one server, one process).

import CJack
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import AudioEngine

/// Deck A and deck B play into input groups `deckA`/`deckB`; `listener` records `pa` (its
/// in_1, in_2: the main output) and `phones` (in_3, in_4: the cue output), and, with
/// `directInputs`, deck A straight from the deck (in_5, in_6).
struct MonitoringBench {
    let deckA: TestJackClient
    let deckB: TestJackClient
    let listener: TestJackClient
    let engine: AudioEngine
    let rate: Int
    let period: Int

    init(_ name: String, deckA signalA: TestSignal, deckB signalB: TestSignal, directInputs: Bool = false)
        throws
    {
        deckA = try TestJackClient(name: unique("recdtest-deckA"), outputs: 2, signal: signalA)
        deckB = try TestJackClient(name: unique("recdtest-deckB"), outputs: 2, signal: signalB)
        listener = try TestJackClient(
            name: unique("recdtest-listener"), inputs: directInputs ? 6 : 4, recordSeconds: 4)
        if directInputs {
            try listener.connect(source: deckA.outputPortNames[0], destination: listener.inputPortNames[4])
            try listener.connect(source: deckA.outputPortNames[1], destination: listener.inputPortNames[5])
        }
        engine = AudioEngine()
        try engine.start(
            clientName: unique(name),
            inputs: [
                PortGroupSpec(name: "deckA", channels: 2, connectTo: deckA.outputPortNames),
                PortGroupSpec(name: "deckB", channels: 2, connectTo: deckB.outputPortNames),
            ],
            outputs: [
                PortGroupSpec(name: "pa", channels: 2, connectTo: Array(listener.inputPortNames[0..<2])),
                PortGroupSpec(name: "phones", channels: 2, connectTo: Array(listener.inputPortNames[2..<4])),
            ])
        rate = engine.sampleRate ?? 48_000
        period = engine.bufferSize ?? 1024
    }

    func close() {
        engine.stop()
        listener.close()
        deckB.close()
        deckA.close()
    }

    /// Lets a few periods pass (so what follows was processed after a change).
    func settle(periods: Int = 4) {
        usleep(UInt32(periods * period * 1_000_000 / rate))
    }

    /// Drops what was recorded so far, then records at least `frames` frames; returns each
    /// listener channel.
    func listen(frames: Int) -> [[Float]] {
        let channels = listener.inputPortNames.count
        _ = listener.takeRecording()
        var recording: [Float] = []
        _ = waitUntil(seconds: 10) {
            recording += listener.takeRecording()
            return recording.count >= frames * channels
        }
        return (0..<channels).map { channel in
            stride(from: channel, to: recording.count, by: channels).map { recording[$0] }
        }
    }
}

/// The DJ setup of the tests: deck A on main, deck B on cue.
private let djSetup = MonitoringSetup(
    mainOutput: "pa", cueOutput: "phones",
    sources: [.input("deckA", toMain: true), .input("deckB", toCue: true)])

extension EngineIntegrationTests {
    @Test(
        "(h) deck A on main, deck B on cue: the main output carries only A, the cue only B, sample-exact",
        .timeLimit(.minutes(1)))
    func mainAndCueAreSeparate() throws {
        let bench = try MonitoringBench("recdtest-h", deckA: .counter, deckB: .constant(0.5))
        defer { bench.close() }
        try bench.engine.setMonitoring(djSetup, rampMilliseconds: 0)
        #expect(bench.engine.monitoring == djSetup)
        let heard = try measureWithoutXruns(bench.engine) {
            bench.settle()
            return bench.listen(frames: bench.rate / 4)
        }
        let main = zip(heard[0], heard[1]).flatMap { [$0, $1] }
        let run = counterRun(main, channels: 2)
        #expect(run.mismatch == nil, "main departs from deck A at frame \(run.mismatch ?? -1)")
        #expect(run.frames == heard[0].count && run.frames >= bench.rate / 4, "no frame of anything else")
        #expect(heard[2].allSatisfy { $0 == 0.5 } && heard[3].allSatisfy { $0 == 0.5 }, "cue: deck B only")
        #expect(!heard[2].isEmpty)
    }

    @Test(
        "(i) cue mix 0.5: the cue output ramps monotonically, no step above the increment, to 0.5 B + 0.5 A",
        .timeLimit(.minutes(1)))
    func cueMixRampsToTheBlend() throws {
        let (a, b): (Float, Float) = (0.25, 0.5)
        let bench = try MonitoringBench("recdtest-i", deckA: .constant(a), deckB: .constant(b))
        defer { bench.close() }
        let rampFrames = Int((0.020 * Double(bench.rate)).rounded())
        let heard = try measureWithoutXruns(bench.engine) {
            try bench.engine.setMonitoring(djSetup, rampMilliseconds: 0)
            bench.settle()
            _ = bench.listener.takeRecording()
            var mixed = djSetup
            mixed.cueMix = 0.5
            try bench.engine.setMonitoring(mixed, rampMilliseconds: 20)
            bench.settle(periods: 2 + rampFrames / bench.period)
            var recording: [Float] = []
            _ = waitUntil(seconds: 10) {
                recording += bench.listener.takeRecording()
                return recording.count >= 4 * bench.rate / 4
            }
            return (0..<4).map { channel in
                stride(from: channel, to: recording.count, by: 4).map { recording[$0] }
            }
        }
        let target = 0.5 * b + 0.5 * a
        let increment = (b - a) * 0.5 / Float(rampFrames)
        for channel in 2..<4 {
            let cue = heard[channel]
            let rampStart = try #require(cue.firstIndex { $0 < b }, "the mix changed")
            #expect(cue[..<rampStart].allSatisfy { $0 == b }, "cue only before")
            let rampEnd = try #require(cue[rampStart...].firstIndex { abs($0 - target) <= 1e-6 })
            #expect(rampEnd - rampStart + 1 == rampFrames, "the ramp takes 20 ms")
            var bad = 0
            var previous = b
            for sample in cue[rampStart...rampEnd] {
                if sample > previous || previous - sample > increment * 1.001 + 1e-7 { bad += 1 }
                previous = sample
            }
            #expect(bad == 0, "every step is downward and no larger than the increment")
            let held = cue[rampEnd...]
            #expect(held.count > bench.rate / 8)
            #expect(held.allSatisfy { abs($0 - target) <= 1e-6 }, "0.5 × B + 0.5 × A after the ramp")
        }
        #expect(heard[0].allSatisfy { $0 == a } && heard[1].allSatisfy { $0 == a }, "main untouched")
    }

    @Test(
        "(j) split cue: left = mono(cue), right = mono(main), mono = (L + R) / 2",
        .timeLimit(.minutes(1)))
    func splitCue() throws {
        let a: [Float] = [0.25, 0.125]
        let b: [Float] = [0.5, -0.1]
        let bench = try MonitoringBench("recdtest-j", deckA: .constants(a), deckB: .constants(b))
        defer { bench.close() }
        var setup = djSetup
        setup.splitCue = true
        setup.cueMix = 0.5  // ignored while split
        try bench.engine.setMonitoring(setup, rampMilliseconds: 0)
        let heard = try measureWithoutXruns(bench.engine) {
            bench.settle()
            return bench.listen(frames: bench.rate / 8)
        }
        let monoCue = (b[0] + b[1]) / 2  // 0.2: not 0.4 (L + R), not 0.283 ((L + R) / √2)
        let monoMain = (a[0] + a[1]) / 2  // 0.1875
        #expect(!heard[2].isEmpty)
        #expect(heard[2].allSatisfy { $0 == monoCue }, "left: \(heard[2].first ?? .nan)")
        #expect(heard[3].allSatisfy { $0 == monoMain }, "right: \(heard[3].first ?? .nan)")
        #expect(heard[0].allSatisfy { $0 == a[0] } && heard[1].allSatisfy { $0 == a[1] }, "main stays stereo")
    }

    @Test("(k) a per-source gain of -6 dB scales by 0.501 on the bus", .timeLimit(.minutes(1)))
    func sourceGain() throws {
        let bench = try MonitoringBench("recdtest-k", deckA: .constant(0.25), deckB: .constant(0.5))
        defer { bench.close() }
        try bench.engine.setMonitoring(
            MonitoringSetup(
                mainOutput: "pa", cueOutput: "phones",
                sources: [.input("deckA", toMain: true, gainDecibels: -6), .input("deckB", toCue: true)]),
            rampMilliseconds: 0)
        let heard = try measureWithoutXruns(bench.engine) {
            bench.settle()
            return bench.listen(frames: bench.rate / 8)
        }
        let ratios = heard[0].map { $0 / 0.25 }
        #expect(!ratios.isEmpty)
        // 10^(-6/20) = 0.501187: within 1e-4 of that (and 2e-4 of 0.501).
        #expect(ratios.allSatisfy { abs($0 - 0.501187) <= 1e-4 && abs($0 - 0.501) <= 2e-4 })
        #expect(heard[2].allSatisfy { $0 == 0.5 }, "deck B's gain is its own")
    }

    @Test(
        "(l) monitoring adds no latency: a deck's impulse is on the main output in the same cycle",
        .timeLimit(.minutes(1)))
    func sameCycleLatency() throws {
        let bench = try MonitoringBench(
            "recdtest-l", deckA: .impulses(interval: 1000, amplitude: 1), deckB: .constant(0),
            directInputs: true)
        defer { bench.close() }
        try bench.engine.setMonitoring(djSetup, rampMilliseconds: 0)
        let input = try bench.engine.addCaptureTap(inputGroup: "deckA")
        let bus = try bench.engine.addBusTap(.main)
        let xrunsBefore = bench.engine.xruns
        let heard = try measureWithoutXruns(bench.engine) {
            bench.settle()
            return bench.listen(frames: bench.rate / 2)
        }
        // The listener hears deck A directly (in_5) and through recd's main output (in_1) in
        // the same cycle of its own: equal indices are equal frame times.
        let direct = heard[4].indices.filter { heard[4][$0] != 0 }
        let monitored = heard[0].indices.filter { heard[0][$0] != 0 }
        #expect(direct.count >= 20)
        #expect(monitored == direct, "impulses at \(monitored.prefix(3)) vs \(direct.prefix(3))")
        #expect(bench.listener.droppedFrames == 0)

        // And in JACK frame time: the impulse's frame on the bus equals its frame on the input.
        // The taps run on while they are read one after the other, so the bus tap may hold a
        // cycle the input tap was read without: only frames both hold are compared.
        func impulseFrameTimes(_ tap: CaptureTap) -> (times: [UInt32], end: UInt32) {
            let samples = tap.read(maxFrames: tap.availableToRead)
            guard let first = tap.firstFrameTime else { return ([], 0) }
            let times = stride(from: 0, to: samples.count, by: tap.channels).filter { samples[$0] != 0 }.map {
                first &+ UInt32($0 / tap.channels)
            }
            return (times, first &+ UInt32(samples.count / tap.channels))
        }
        let (inputTimes, inputEnd) = impulseFrameTimes(input)
        let onInput = Set(inputTimes)
        let onBus = impulseFrameTimes(bus).times.filter { Int32(bitPattern: inputEnd &- $0) > 0 }
        #expect(onBus.count >= 20)
        // An xrun while the taps ran loses periods, and with them the frame accounting from the
        // first frame; only a clean stretch can be compared frame by frame. PipeWire's JACK never
        // reports xruns, so there every run is compared, and a lost cycle fails it.
        if bench.engine.xruns == xrunsBefore {
            let taps = "taps from \(input.firstFrameTime ?? 0), \(bus.firstFrameTime ?? 0)"
            #expect(
                onBus.allSatisfy(onInput.contains),
                "every bus impulse sits at an input impulse's frame time (\(taps); at \(onInput.sorted().prefix(3)))")
        }
        #expect(input.overruns == 0 && bus.overruns == 0)
    }

    @Test("(m) a bus tap records the main bus sample-exact", .timeLimit(.minutes(1)))
    func busTapIsExact() throws {
        let bench = try MonitoringBench("recdtest-m", deckA: .counter, deckB: .constant(0.5))
        defer { bench.close() }
        try bench.engine.setMonitoring(djSetup, rampMilliseconds: 0)
        var tap: CaptureTap?
        let captured = try measureWithoutXruns(bench.engine) {
            let attempt = try bench.engine.addBusTap(.main)
            defer { bench.engine.removeCaptureTap(attempt) }
            tap = attempt
            var captured: [Float] = []
            #expect(
                waitUntil(seconds: 10) {
                    captured += attempt.read(maxFrames: bench.rate)
                    return captured.count >= bench.rate
                })
            return captured
        }
        let recorded = try #require(tap)
        #expect(recorded.bus == .main && recorded.channels == 2 && recorded.firstFrameTime != nil)
        let run = counterRun(captured, channels: 2)
        #expect(run.mismatch == nil, "the tap departs from deck A at frame \(run.mismatch ?? -1)")
        #expect(run.frames == captured.count / 2, "nothing but deck A, from the first frame")
        #expect(recorded.overruns == 0 && recorded.drainGaps().isEmpty)
        #expect(!recorded.isAttached)
    }

    @Test(
        "(n) meters: a -6 dBFS sine reads -6.0 dB peak on its input and on the main bus; a full-scale sine's RMS is -3.01 dB",
        .timeLimit(.minutes(1)))
    func busMeters() throws {
        // 48 frames per cycle (1 kHz at 48 kHz): the peak falls on a sample.
        let bench = try MonitoringBench(
            "recdtest-n",
            deckA: .sine(cycleFrames: 48, amplitude: AudioEngine.linearGain(decibels: -6)),
            deckB: .sine(cycleFrames: 48, amplitude: 1))
        defer { bench.close() }
        #expect(bench.engine.meters().allSatisfy { $0.direction != .bus }, "no bus meters before a setup")
        try bench.engine.setMonitoring(djSetup, rampMilliseconds: 0)
        let readings = try measureWithoutXruns(bench.engine) {
            bench.settle()
            _ = bench.engine.meters()
            usleep(300_000)
            return bench.engine.meters()
        }
        func reading(_ name: String) throws -> MeterReading {
            try #require(readings.first { $0.name == name }, "no meter \(name) in \(readings.map(\.name))")
        }
        #expect(
            readings.filter { $0.direction == .bus }.map(\.name) == [
                "bus:main_1", "bus:main_2", "bus:cue_1", "bus:cue_2",
            ])
        for name in ["deckA_1", "deckA_2", "bus:main_1", "bus:main_2"] {
            let meter = try reading(name)
            #expect(abs(meter.peakDecibels - -6.0) <= 0.1, "\(name) peak \(meter.peakDecibels)")
            #expect(abs(meter.rmsDecibels - -9.01) <= 0.05, "\(name) rms \(meter.rmsDecibels)")
            #expect(meter.frames >= bench.rate / 10)
        }
        for name in ["deckB_1", "bus:cue_1", "bus:cue_2"] {
            let meter = try reading(name)
            #expect(abs(meter.rmsDecibels - -3.01) <= 0.05, "\(name) rms \(meter.rmsDecibels)")
            #expect(abs(meter.peakDecibels) <= 0.01, "\(name) peak \(meter.peakDecibels)")
        }
        #expect(try reading("bus:main_1").group == "main" && reading("bus:cue_2").channel == 1)
    }

    @Test(
        "(o) JACK's process thread makes no allocation while monitoring sources, ramps, split, players and bus taps run",
        .timeLimit(.minutes(1)))
    func noAllocationsWhileMonitoring() throws {
        let bench = try MonitoringBench("recdtest-o", deckA: .counter, deckB: .constant(0.5))
        defer { bench.close() }
        let engine = bench.engine
        let rate = bench.rate
        let player = try engine.addPlayer(channels: 2, outputGroup: "pa", bufferFrames: 2 * rate)
        _ = player.write([Float](repeating: 0.5, count: 4 * rate))
        engine.play(player)
        let tap = try engine.addBusTap(.cue, bufferFrames: rate / 10)
        let mainTap = try engine.addBusTap(.main)
        var setup = MonitoringSetup(
            mainOutput: "pa", cueOutput: "phones",
            sources: [
                .input("deckA", toMain: true), .input("deckB", toCue: true, gainDecibels: -3),
                .player(player.id, toMain: true, toCue: true),
            ])
        try engine.setMonitoring(setup, rampMilliseconds: 100)
        #expect(waitUntil(seconds: 5) { tap.framesCaptured > 0 && player.framesPlayed > 0 })

        let handle = try #require(engine.jackClientHandle)
        let thread = jack_client_thread_id(handle)
        let played = player.framesPlayed
        var failures: [AudioEngineError] = []
        let counts = AllocationCounter.counting(thread: thread) {
            // The control thread keeps changing the setup while the process thread runs.
            for step in 0..<8 {
                setup.cueMix = Double(step % 3) / 2
                setup.splitCue = step % 2 == 1
                setup.sources[1].gainDecibels = -Double(step)
                setup.sources[0].toCue = step % 4 == 0
                do throws(AudioEngineError) {
                    try engine.setMonitoring(setup, rampMilliseconds: 30)
                } catch { failures.append(error) }
                _ = engine.drainNotifications()
                usleep(50_000)
            }
        }
        #expect(failures.isEmpty)
        #expect(player.framesPlayed > played, "the process thread ran while counting")
        #expect(tap.overruns > 0, "the small bus-tap ring overflowed, so the gap path ran too")
        #expect(counts.allocations == 0, "\(counts)")
        _ = mainTap
    }
}
