// Who may record (SPEC §8, §2): record permission, and the checks a recorder passes before it
// starts (category, usage description, permission, a dualRoute session's inputs).

extension SessionStore {
    public mutating func setPermission(app: String, _ state: RecordPermission) -> [PolicyEffect] {
        guard permission(app) != state else { return [] }
        permissions[app] = state == .undetermined ? nil : state
        return [.recordPermission(app: app, state: state)]
    }

    /// An administrator's decision on `app`'s record permission. Denied stays denied: a grant
    /// after a denial is refused until the permission is reset (SPEC §8's "once denied").
    public mutating func decidePermission(app: String, _ state: RecordPermission) throws(SessionError) -> [PolicyEffect]
    {
        if state == .granted && permission(app) == .denied {
            throw SessionError(
                .badParam,
                "record permission for \(app) is denied; denied stays denied until reset: run `recctl permission reset \(app)` first"
            )
        }
        return setPermission(app: app, state)
    }

    /// Whether `app`'s captures must carry silence instead of its inputs: its input is muted,
    /// or it lacks record permission. No sample of an input reaches a file of an app that is
    /// not granted (SPEC §8); an unknown app is silenced.
    public func capturesSilenced(app: String) -> Bool {
        (sessions[app]?.inputMuted ?? true) || permission(app) != .granted
    }

    /// Checks that `app` may record the input `port` given its mode: a dualRoute session records
    /// only the inputs of its route (its built-in microphone and one duplex secondary).
    public func checkRecordInput(app: String, port: String) throws(SessionError) {
        let session = try session(app)
        guard session.configuration.mode == .dualRoute, !session.route.inputs.contains(port) else { return }
        let duplex = ports.filter { $0.direction == .duplex && RouteChooser.dualRouteSecondaryTypes.contains($0.type) }
            .map(\.name)
        throw SessionError(
            .resourceNotAvailable,
            "dualRoute records its built-in microphone and one duplex secondary (\(session.route.inputs.joined(separator: ", "))); \(port) is not one of them. A secondary must be a duplex headsetMic, bluetoothHFP or bluetoothLE port\(duplex.isEmpty ? " (none is configured)" : ": \(duplex.joined(separator: ", "))")"
        )
    }

    /// Checks that a session may start a recorder now (SPEC §8, §2).
    public func checkCanRecord(app: String) throws(SessionError) {
        let session = try session(app)
        guard mediaServicesAvailable else {
            throw SessionError(
                .mediaServicesFailed,
                "the JACK server is gone; wait for mediaServicesWereReset and start the recorder again")
        }
        let category = session.configuration.category
        guard category.hasInput else {
            throw SessionError(
                .incompatibleCategory,
                "category \(category.rawValue) cannot record; set record, playAndRecord or multiRoute")
        }
        if (session.micUsage ?? "").isEmpty {
            throw SessionError(
                .missingEntitlement, "\(app) declares no microphone usage description", remedy: .declareMicUsage)
        }
        switch permission(app) {
        case .granted: return
        case .denied:
            throw SessionError(
                .cannotStartRecording,
                "record permission for \(app) is denied; an administrator can reset it with `recctl permission reset \(app)` and grant it with `recctl permission grant \(app)`"
            )
        case .undetermined:
            throw SessionError(
                .cannotStartRecording,
                "record permission for \(app) is undetermined; an administrator must grant it with `recctl permission grant \(app)`"
            )
        }
    }
}
