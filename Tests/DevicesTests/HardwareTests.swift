// The real ALSA code paths. On a box without sound hardware (CI, this container: no /dev/snd)
// they must find nothing and still start, run and stop cleanly; with cards present (e.g.
// `modprobe snd-dummy`) the opportunistic tests read real controls.

import Glibc
import Synchronization
import TestSupport
import Testing

@testable import Devices

/// Whether this machine has any sound card libasound can see.
let cardsPresent = !SoundCards.list().isEmpty
/// Whether the snd-dummy card (driver "Dummy"), which has capture switches, is loaded.
let dummyCardPresent = SoundCards.list().contains { $0.driver == "Dummy" }

@Suite("ALSA, real code path")
struct HardwareTests {
    @Test("card discovery returns without error, and matches /dev/snd")
    func discovery() {
        let (cards, problems) = SoundCards.scan()
        let controlNodes =
            listDirectory("/dev/snd").filter { $0.hasPrefix("controlC") }.count
        #expect(cards.count + problems.count == controlNodes, "cards \(cards), problems \(problems)")
        #expect(SoundCards.list() == cards)
        for card in cards {
            #expect(!card.id.isEmpty)
            #expect(card.index >= 0)
        }
    }

    @Test("the control monitor opens, polls, rescans and closes with whatever cards exist")
    func monitorLifecycle() throws {
        let monitor = ControlMonitor()
        let initial = try monitor.start()
        let cards = SoundCards.list()
        #expect(monitor.watchedCards == cards)
        #expect(initial.filter { if case .cardAdded = $0 { true } else { false } }.count == cards.count)
        #expect(monitor.currentState() == initial)
        #expect(monitor.pollDescriptors().count >= cards.count)
        // Nothing changed, so nothing is reported.
        #expect(monitor.process(revents: [:]).isEmpty)
        #expect(monitor.rescan().isEmpty)
        monitor.close()
        #expect(monitor.watchedCards.isEmpty)
        #expect(monitor.pollDescriptors().isEmpty)
        monitor.close()
    }

    @Test("ALSAEventSource delivers the initial state on the alsa monitor thread, then stops")
    func sourceStartsAndStops() throws {
        let source = ALSAEventSource(rescanInterval: .milliseconds(10))
        let deliveries = Deliveries()
        try source.start(deliver: deliveries.deliver)
        #expect(eventually { deliveries.count >= 1 }, "the initial state was never delivered")
        // Let the rescan timer fire a few times: with no change it must stay quiet.
        usleep(50_000)
        source.stop()
        let batches = deliveries.all
        #expect(batches.count == 1, "unexpected deliveries: \(batches.map(\.events))")
        #expect(batches.first?.threadName == "alsa monitor")
        #expect(batches.first.map { pthread_equal($0.thread, pthread_self()) == 0 } == true)
        #expect(batches.first?.events == (try ControlMonitor().start()))
        // No more deliveries after stop; stop again is harmless; the source can start again.
        usleep(30_000)
        #expect(deliveries.count == 1)
        source.stop()
        try source.start(deliver: deliveries.deliver)
        #expect(eventually { deliveries.count == 2 })
        source.stop()
    }

    @Test("stop from inside deliver does not deadlock, and no rescan is fine too")
    func stopFromDeliver() throws {
        let source = ALSAEventSource(rescanInterval: nil)
        let stopped = Atomic<Bool>(false)
        try source.start { [source] _ in
            source.stop()
            stopped.store(true, ordering: .sequentiallyConsistent)
        }
        #expect(eventually { stopped.load(ordering: .sequentiallyConsistent) })
    }

    @Test(
        "with a card present, its watched controls are read",
        .enabled(if: cardsPresent, "no sound card here (no /dev/snd); load snd-dummy to run this"))
    func readsRealControls() throws {
        let monitor = ControlMonitor()
        let initial = try monitor.start()
        for card in monitor.watchedCards {
            #expect(initial.contains(.cardAdded(card)))
        }
        for event in initial {
            switch event {
            case .jackSense(_, let control, _): #expect(control.contains(" Jack"))
            case .captureSwitch(_, let control, _): #expect(control.contains("Capture Switch"))
            case .cardAdded: break
            case .cardRemoved: Issue.record("cardRemoved in an initial state")
            }
        }
    }

    @Test(
        "snd-dummy's capture switches are reported",
        .enabled(if: dummyCardPresent, "snd-dummy is not loaded (modprobe snd-dummy needs a kernel that allows it)"))
    func dummyCaptureSwitches() throws {
        let monitor = ControlMonitor()
        let initial = try monitor.start()
        let dummy = try #require(monitor.watchedCards.first { $0.driver == "Dummy" })
        let switches = initial.filter {
            if case .captureSwitch(dummy.id, _, _) = $0 { true } else { false }
        }
        #expect(!switches.isEmpty, "no capture switch on \(dummy): \(initial)")
    }
}

/// Directory entries; none when the directory does not exist.
func listDirectory(_ path: String) -> [String] {
    guard let directory = opendir(path) else { return [] }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name != "." && name != ".." { names.append(name) }
    }
    return names
}
