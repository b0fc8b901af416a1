// The injectable event source: events pushed on some threads arrive, in order, on the
// source's own queue, and drive DeviceBindings as ALSA's would.

import Glibc
import Synchronization
import TestSupport
import Testing

@testable import Devices

/// DeviceBindings fed by a source's deliver callback, as the daemon's control thread would
/// be: the signals, in order, and the bindings' state.
final class BindingsSink: Sendable {
    private let state: Mutex<(bindings: DeviceBindings, signals: [PortSignal], batches: Int)>

    init(_ bindings: DeviceBindings) {
        state = Mutex((bindings, [], 0))
    }

    var deliver: @Sendable ([DeviceEvent]) -> Void {
        { [self] events in
            state.withLock { state in
                state.signals += state.bindings.apply(events)
                state.batches += 1
            }
        }
    }

    var signals: [PortSignal] { state.withLock { $0.signals } }
    var batches: Int { state.withLock { $0.batches } }
    func isPlugged(_ port: String) -> Bool? { state.withLock { $0.bindings.isPlugged(port: port) } }
    func isMuted(_ port: String) -> Bool { state.withLock { $0.bindings.isHardwareMuted(port: port) } }
}

@Suite("ScriptedEventSource")
struct ScriptedEventSourceTests {
    @Test("initial state first, then pushed batches, on the source's queue, never the pusher's thread")
    func initialStateThenPushes() throws {
        let source = ScriptedEventSource(initialState: [
            .cardAdded(card("PCH", 0)), .jackSense(card: "PCH", control: "Headphone Jack", plugged: false),
        ])
        let deliveries = Deliveries()
        // Not running yet: dropped.
        #expect(source.push(.jackSense(card: "PCH", control: "Headphone Jack", plugged: true)) == false)
        try source.start(deliver: deliveries.deliver)
        #expect(source.isRunning)
        #expect(source.push(.captureSwitch(card: "PCH", control: "Capture Switch", on: false)))
        source.drain()
        let batches = deliveries.all
        #expect(
            batches.map(\.events) == [
                [.cardAdded(card("PCH", 0)), .jackSense(card: "PCH", control: "Headphone Jack", plugged: false)],
                [.captureSwitch(card: "PCH", control: "Capture Switch", on: false)],
            ])
        #expect(batches.allSatisfy { pthread_equal($0.thread, pthread_self()) == 0 })
        source.stop()
        #expect(!source.isRunning)
        #expect(source.push(.cardRemoved(card: "PCH")) == false)
        source.drain()
        #expect(deliveries.count == 2)
    }

    @Test("events pushed from one thread arrive in order and drive the bindings")
    func orderIntoBindings() throws {
        let sink = BindingsSink(
            try DeviceBindings([
                DeviceBindings.Declaration(port: "phones", sense: "Headphone Jack"),
                DeviceBindings.Declaration(port: "mic", muteSwitch: "Capture Switch"),
            ]))
        let source = ScriptedEventSource(initialState: [.cardAdded(card("PCH", 0))])
        try source.start(deliver: sink.deliver)
        let rounds = 500
        runOnThreads(1) { _ in
            for round in 0..<rounds {
                let plugged = round % 2 == 0
                // Each change twice: the repeat must give nothing.
                source.push(.jackSense(card: "PCH", control: "Headphone Jack", plugged: plugged))
                source.push([
                    .jackSense(card: "PCH", control: "Headphone Jack", plugged: plugged),
                    .captureSwitch(card: "PCH", control: "Capture Switch", on: !plugged),
                ])
            }
        }
        source.drain()
        // Only the alternation survives, exactly in push order.
        var expected: [PortSignal] = []
        for round in 0..<rounds {
            let plugged = round % 2 == 0
            expected.append(.plugged(port: "phones", plugged))
            if round > 0 || plugged { expected.append(.hardwareMuted(port: "mic", plugged)) }
        }
        #expect(sink.signals == expected)
        #expect(sink.batches == 1 + 2 * rounds)
        #expect(sink.isPlugged("phones") == ((rounds - 1) % 2 == 0))
        #expect(sink.isMuted("mic") == ((rounds - 1) % 2 == 0))
        source.stop()
    }

    @Test("pushes from several threads keep each thread's order and lose nothing")
    func severalThreads() throws {
        let threads = 4
        let perThread = 200
        let declarations = (0..<threads).map {
            DeviceBindings.Declaration(port: "port\($0)", sense: "hw:card\($0)/Headphone Jack")
        }
        let sink = BindingsSink(try DeviceBindings(declarations))
        let deliveries = Deliveries()
        let source = ScriptedEventSource()
        try source.start { events in
            sink.deliver(events)
            deliveries.deliver(events)
        }
        runOnThreads(threads) { thread in
            for round in 0..<perThread {
                source.push(.jackSense(card: "card\(thread)", control: "Headphone Jack", plugged: round % 2 == 0))
            }
        }
        source.drain()
        #expect(deliveries.count == 1 + threads * perThread)
        #expect(Set(deliveries.all.map { $0.threadName }).count == 1, "more than one delivering thread")
        for thread in 0..<threads {
            let port = "port\(thread)"
            let mine = sink.signals.filter {
                if case .plugged(port, _) = $0 { true } else { false }
            }
            #expect(mine == (0..<perThread).map { .plugged(port: port, $0 % 2 == 0) })
            #expect(sink.isPlugged(port) == ((perThread - 1) % 2 == 0))
        }
        source.stop()
    }

    @Test("after stop nothing more is delivered; a start error is thrown; restart delivers the new state")
    func stopAndRestart() throws {
        struct NoCards: Error, Equatable {}
        let source = ScriptedEventSource(startError: NoCards())
        let deliveries = Deliveries()
        #expect(throws: NoCards()) { try source.start(deliver: deliveries.deliver) }
        #expect(!source.isRunning)
        source.setStartError(nil)
        try source.start(deliver: deliveries.deliver)
        for _ in 0..<100 { source.push(.cardRemoved(card: "X")) }
        source.stop()
        let delivered = deliveries.count
        // Stopped at once: anything from none to all of it may have gone out, in order.
        #expect(delivered <= 101)
        #expect(deliveries.all.first.map { $0.events == [] } ?? true)
        usleep(20_000)
        #expect(deliveries.count == delivered, "delivered after stop returned")
        source.setInitialState([.cardAdded(card("PCH", 0))])
        try source.start(deliver: deliveries.deliver)
        source.drain()
        #expect(deliveries.all.last?.events == [.cardAdded(card("PCH", 0))])
        source.stop()
        source.stop()
    }

    @Test("stop from inside deliver does not deadlock")
    func stopFromDeliver() throws {
        let source = ScriptedEventSource()
        let calls = Atomic<Int>(0)
        try source.start { [source] _ in
            calls.add(1, ordering: .sequentiallyConsistent)
            source.stop()
        }
        #expect(eventually { calls.load(ordering: .sequentiallyConsistent) == 1 })
        source.push(.cardRemoved(card: "X"))
        source.drain()
        #expect(calls.load(ordering: .sequentiallyConsistent) == 1)
        #expect(!source.isRunning)
    }

    @Test("both sources are usable through the protocol")
    func protocolSeam() throws {
        let sources: [any DeviceEventSource] = [ScriptedEventSource(), ALSAEventSource(rescanInterval: nil)]
        for source in sources {
            let deliveries = Deliveries()
            try source.start(deliver: deliveries.deliver)
            #expect(eventually { deliveries.count == 1 }, "\(type(of: source)) gave no initial state")
            source.stop()
        }
    }
}
