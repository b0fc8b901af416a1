// The main/cue monitoring and the meters. Control thread.
import Platform

extension AudioEngine {
    // MARK: Monitoring

    /// The monitoring setup in force (nil: none set).
    public var monitoring: MonitoringSetup? { monitoringSetup }

    /// Sets the DJ-style main/cue monitoring (SPEC §4 multiRoute, §12 `recctl cue`): builds the
    /// setup's plan and publishes it in a new snapshot; the process thread picks it up at its
    /// next period. Gains (a source's gain, a source joining or leaving a bus) and the cue mix
    /// ramp linearly over `rampMilliseconds`, per sample, so changes do not click; switching
    /// `splitCue` crossfades over the same time. A source new to the buses fades in from
    /// silence; an input group dropped from `sources` fades out. Changing which output groups
    /// carry the buses, or `busChannels`, takes effect at once.
    ///
    /// A player that is a source is heard only through the buses: its direct route to its own
    /// output group is bypassed while it is in `sources` (see `MonitoringSource`).
    ///
    /// A rejected setup (unknown group, cue mix outside 0...1, ...) throws and changes nothing.
    public func setMonitoring(
        _ setup: MonitoringSetup, rampMilliseconds: Double = AudioEngine.defaultRampMilliseconds
    ) throws(AudioEngineError) {
        guard let connection, runningClient != nil else { throw lostOrNotRunning }
        guard rampMilliseconds.isFinite, rampMilliseconds >= 0 else {
            throw .invalidArgument("a ramp takes 0 ms or more, not \(rampMilliseconds)")
        }
        let plan = try connection.memory.makeMonitoringPlan(
            setup, rampFrames: rampFrames(rampMilliseconds),
            inputGroups: Self.layouts(connection.inputs), outputGroups: Self.layouts(connection.outputs))
        var graph = connection.memory.graph
        graph.monitoring = plan
        connection.memory.publish(graph)
        monitoringSetup = setup
    }

    /// Adds a tap on a monitoring bus: records what the room heard (`.main`) or the cue, after
    /// the source gains and before the outputs (the cue mix and split do not apply). Same
    /// `CaptureTap` API as an input tap: `read`, `drainGaps` (whole-period gaps on overflow;
    /// with a period longer than 2048 frames, whole 2048-frame chunks), `firstFrameTime`,
    /// `setZeroed`; remove it with `removeCaptureTap`.
    ///
    /// It has the bus's channels as they are now (`busChannels` of the setup, 2 without one);
    /// bus channels added later are not in it, channels removed later read as silence, and so
    /// does the whole bus while no setup is set.
    ///
    /// - Parameter bufferFrames: ring size; default two seconds.
    public func addBusTap(_ bus: Bus, bufferFrames: Int? = nil) throws(AudioEngineError) -> CaptureTap {
        guard let connection, let client = runningClient else { throw lostOrNotRunning }
        let channels = connection.memory.graph.monitoring?.setup.busChannels ?? MonitoringSetup.defaultBusChannels
        let tap = CaptureTap(
            inputGroup: bus.rawValue, bus: bus,
            flatInputChannels: (0..<channels).map { MonitorState.busIndex(cue: bus == .cue, channel: $0) },
            capacityFrames: max(bufferFrames ?? 2 * client.sampleRate, 1), zeroed: false,
            sampleRate: client.sampleRate)
        var graph = connection.memory.graph
        graph.busTaps.append(tap)
        connection.memory.publish(graph)
        return tap
    }

    static func layouts(_ groups: [Group]) -> [String: GroupLayout] {
        Dictionary(
            groups.map { ($0.spec.name, GroupLayout(flatBase: $0.flatBase, channels: $0.spec.channels)) },
            uniquingKeysWith: { first, _ in first })
    }

    // MARK: Meters

    /// Whether the process thread measures the input and output meters (on when the engine
    /// starts). The control thread turns them off while no one reads `meters()`: per-period
    /// work only for what is in use. Bus meters run while monitoring is set.
    public var metersActive: Bool {
        get { connection?.memory.state.pointee.metersActive.load(ordering: .relaxed) ?? false }
        set { connection?.memory.state.pointee.metersActive.store(newValue, ordering: .relaxed) }
    }

    /// Peak and RMS of every input and output channel since the previous call (which resets
    /// them), inputs first, in group and channel order; then, while a monitoring setup is set,
    /// each channel of the main and the cue bus (group `main`/`cue`, direction `.bus`).
    public func meters() -> [MeterReading] {
        guard let connection else { return [] }
        var readings: [MeterReading] = []
        for group in connection.inputs + connection.outputs {
            for channel in 0..<group.spec.channels {
                let cell =
                    group.direction == .input
                    ? connection.memory.meter(input: group.flatBase + channel)
                    : connection.memory.meter(output: group.flatBase + channel)
                readings.append(
                    MeterReading(
                        group: group.spec.name, channel: channel, direction: group.direction,
                        taken: cell.pointee.take()))
            }
        }
        if let setup = connection.memory.graph.monitoring?.setup {
            for bus in Bus.allCases {
                for channel in 0..<setup.busChannels {
                    let cell = connection.memory.meter(bus: bus, channel: channel)
                    readings.append(
                        MeterReading(
                            group: bus.rawValue, channel: channel, direction: .bus,
                            taken: cell.pointee.take()))
                }
            }
        }
        return readings
    }
}
