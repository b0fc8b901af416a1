// What a player costs recd every second, and how much of it one user's players may take together.

/// A player's work per second, in samples: its feeder reads and decodes the file
/// (`fileRate` × `fileChannels`, the part a 384 kHz, 64-channel file makes large), and the
/// process thread mixes what the feeder made of it (`outputRate` × `outputChannels`, the JACK
/// rate and the channels it plays to: the only part on the real-time thread). Rate conversion
/// and channel mapping sit between the two, on the feeder, and scale with the same numbers.
public struct PlayerLoad: Equatable, Sendable {
    public var fileRate: Int
    public var fileChannels: Int
    public var outputRate: Int
    public var outputChannels: Int

    public init(fileRate: Int, fileChannels: Int, outputRate: Int, outputChannels: Int) {
        self.fileRate = fileRate
        self.fileChannels = fileChannels
        self.outputRate = outputRate
        self.outputChannels = outputChannels
    }

    /// Samples read plus samples mixed each second (saturating: headers are outside bytes).
    public var samplesPerSecond: Int {
        Self.product(fileRate, fileChannels).addingSaturated(Self.product(outputRate, outputChannels))
    }

    private static func product(_ a: Int, _ b: Int) -> Int {
        let (value, overflow) = max(a, 0).multipliedReportingOverflow(by: max(b, 0))
        return overflow ? .max : value
    }

    /// "384 kHz × 64 channels read, 48 kHz × 2 played".
    var description: String {
        "\(Self.rate(fileRate)) × \(fileChannels) channel\(fileChannels == 1 ? "" : "s") read, "
            + "\(Self.rate(outputRate)) × \(outputChannels) played"
    }

    /// A rate as a person writes it: 48 kHz, 44.1 kHz, 8 kHz.
    static func rate(_ hertz: Int) -> String {
        guard hertz >= 1000 else { return "\(hertz) Hz" }
        let tenths = hertz / 100 + (hertz % 100 >= 50 ? 1 : 0)
        return tenths % 10 == 0 ? "\(tenths / 10) kHz" : "\(tenths / 10).\(tenths % 10) kHz"
    }

    /// Samples per second as a person writes them: 24.7 M, 192 k, 800.
    static func amount(_ samples: Int) -> String {
        if samples >= 950_000 {
            let tenths = samples / 100_000 + (samples % 100_000 >= 50_000 ? 1 : 0)
            return tenths % 10 == 0 ? "\(tenths / 10) M" : "\(tenths / 10).\(tenths % 10) M"
        }
        return samples >= 1000 ? "\(samples / 1000) k" : "\(samples)"
    }
}

extension Int {
    fileprivate func addingSaturated(_ other: Int) -> Int {
        let (value, overflow) = addingReportingOverflow(other)
        return overflow ? .max : value
    }
}

extension SessionStore {
    /// The most samples per second the players of one user (not an administrator) may move
    /// together unless `[daemon] player_load_per_user` says otherwise: one 384 kHz, 64-channel
    /// file played to a stereo output (24.7 M), or 16 players of 192 kHz, 8-channel files to
    /// 8-channel outputs (30.7 M); 16 stereo 48 kHz players need 3.1 M.
    public static let defaultPlayerLoadPerUser = 32_000_000
    /// What `[daemon] player_load_per_user` may be: from one stereo 48 kHz player up.
    public static let playerLoadPerUserRange = 192_000...2_000_000_000

    /// Checks that a new player of `app` moving `load` fits in its owner's budget: `loads` is
    /// what each app's players move now, `replacing` what the stream's current player moves
    /// (a new file on a stream that plays gives that back). Administrators are exempt, as from
    /// the player counts. A player's load bounds both its feeder's CPU and its share of the
    /// JACK cycle, so one user's files cannot starve another user's recordings.
    public func checkPlayerLoad(
        app: String, adding load: PlayerLoad, replacing: Int, loads: [String: Int], budget: Int,
        by requester: Requester
    ) throws(SessionError) {
        let session = try session(app)
        if requester.isAdministrator { return }
        let owner = session.ownerUID
        let current = loads.reduce(0) { total, entry in
            sessions[entry.key]?.ownerUID == owner ? total.addingSaturated(max(entry.value, 0)) : total
        }
        let others = current - min(max(replacing, 0), current)
        let after = others.addingSaturated(load.samplesPerSecond)
        guard after > budget else { return }
        throw SessionError(
            .resourceNotAvailable,
            "this file would take the players of uid \(owner) to \(PlayerLoad.amount(after)) samples/s, over the "
                + "\(PlayerLoad.amount(budget)) one user's players may move ([daemon] player_load_per_user): the "
                + "file moves \(PlayerLoad.amount(load.samplesPerSecond)) (\(load.description)), the user's other "
                + "players \(PlayerLoad.amount(others)); stop one with `recctl stop APP --stream NAME`, or play a "
                + "copy with fewer channels or a lower rate (e.g. `sox IN -r 48000 OUT.flac remix 1 2`)")
    }
}
