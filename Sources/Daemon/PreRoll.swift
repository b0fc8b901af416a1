// Pre-roll: a session's input kept in memory, so that `record start` begins
// `pre_roll_seconds` before the command.
//
// Each session with a pre-roll has a capture tap on its route input whose ring holds the
// pre-roll plus a margin; the ring is allocated here on the control thread, before the tap
// joins the graph, and the process thread fills it like any tap. The control thread drops all
// but the last `pre_roll_seconds` on every tick (`trim`, a counter step: no copy). `record
// start` takes the tap over as the recorder's own (`take`): the frames it holds become the
// segment's first, and its START is the JACK time of the oldest one kept. A new pre-roll tap
// follows on the next tick. Memory: 4 bytes per sample, 11.52 MB per channel-minute at 48 kHz
// (pre-roll plus `marginSeconds`).
//
// A session whose capture is processed (voiceChat, echo cancellation) keeps the reference tap
// of its route output beside it, as its recorder would (`CaptureTap.reference`: published in
// the same snapshot, twice the ring, up to 8 channels), trimmed in step with the capture, so
// a take records processed from its pre-roll's first frame on (`VoiceCaptureSource`).
//
// Threads: the control thread only.
import AudioEngine
import Foundation
import SystemSupport

/// The pre-roll taps of every session, by app.
final class PreRollKeeper {
    /// One session's pre-roll.
    struct Held {
        var port: String
        var inputGroup: String
        /// The output group whose reference tap it keeps (a processed session's far end).
        var referenceGroup: String?
        var channels: Int
        /// Frames kept: `pre_roll_seconds` × rate.
        var frames: Int
        var tap: CaptureTap
        /// Frames discarded so far (stream positions before the ring's read position).
        var discarded: Int
        /// Set by a level trigger: `take` starts the recording at this stream position (its
        /// crossing less the pre-roll), not at the last `frames`.
        var takeFrom: Int? = nil
        /// Tells this tap from every other the keeper made (an address may be reused).
        var serial = 0
        /// Gaps drained from the tap (`trim`), so its small gap log never fills while it is
        /// kept: those before the discarded frames folded into one per cause at position 0
        /// (all a recording needs of them is their total), the later ones as logged.
        var gaps: [CaptureGap] = []
    }

    /// What `take` hands a recorder: the tap, and where its readable frames begin.
    struct Taken {
        var tap: CaptureTap
        /// Stream position (frames written, gaps not counted) of the first readable frame.
        var position: Int
        /// Frames readable now: the pre-roll the recording starts with.
        var frames: Int
        /// Gaps the keeper drained from the tap (see `Held.gaps`); the rest are still in it.
        var gaps: [CaptureGap] = []
    }

    /// Room beyond the pre-roll for the ticks between trims and for a recorder's archiver.
    static let marginSeconds = 4

    private let engine: any RecorderEngine
    private(set) var held: [String: Held] = [:]
    /// Taps made before a take (`prepareNext`), to follow the taken one in `held`.
    private var next: [String: Held] = [:]
    private var serials = 0

    init(engine: any RecorderEngine) { self.engine = engine }

    /// Ring size of a pre-roll of `seconds` at `sampleRate`, in frames (what `keep` allocates).
    static func ringFrames(seconds: Int, sampleRate: Int) -> Int { (seconds + marginSeconds) * sampleRate }

    /// Keeps `seconds` of `port` (input group `inputGroup`, its first `channels`) for `app`,
    /// with the reference tap of output group `reference` when the session's capture is
    /// processed; `seconds` 0 or no port ends the app's pre-roll, unless `evenWithoutPreRoll`
    /// (an armed trigger looks at the tap's level). An existing tap on another port, size or
    /// reference is replaced (its pre-roll is lost: a new input has no past).
    func keep(
        app: String, port: String?, inputGroup: String?, channels: Int, seconds: Int, reference: String? = nil,
        evenWithoutPreRoll: Bool = false
    ) {
        guard let port, let inputGroup, seconds > 0 || evenWithoutPreRoll, engine.isRunning,
            let rate = engine.sampleRate
        else {
            release(app)
            return
        }
        let frames = seconds * rate
        if let current = held[app], current.port == port, current.channels == channels, current.frames == frames,
            current.referenceGroup == reference, current.tap.isAttached
        {
            return
        }
        release(app)
        do {
            let tap = try engine.addCaptureTap(
                inputGroup: inputGroup, channels: channels, zeroed: false,
                frames: Self.ringFrames(seconds: seconds, sampleRate: rate), reference: reference)
            serials += 1
            held[app] = Held(
                port: port, inputGroup: inputGroup, referenceGroup: reference, channels: channels, frames: frames,
                tap: tap, discarded: 0, serial: serials)
        } catch {
            Log.warning("\(app): no pre-roll on \(port): \(error); recordings start when asked")
        }
    }

    /// Ends `app`'s pre-roll (its tap leaves the graph; its memory with the handle).
    func release(_ app: String) {
        if let waiting = next.removeValue(forKey: app) { engine.removeCaptureTap(waiting.tap) }
        guard let current = held.removeValue(forKey: app) else { return }
        engine.removeCaptureTap(current.tap)
    }

    /// Before `take`: the tap that follows the taken one, made now, so that the level is
    /// watched without a hole while the recorder starts (which takes a few periods).
    func prepareNext(app: String) {
        guard next[app] == nil, let current = held[app], let rate = engine.sampleRate else { return }
        do {
            let tap = try engine.addCaptureTap(
                inputGroup: current.inputGroup, channels: current.channels, zeroed: false,
                frames: current.frames + PreRollKeeper.marginSeconds * rate, reference: current.referenceGroup)
            serials += 1
            next[app] = Held(
                port: current.port, inputGroup: current.inputGroup, referenceGroup: current.referenceGroup,
                channels: current.channels, frames: current.frames, tap: tap, discarded: 0, serial: serials)
        } catch {
            Log.warning("\(app): no pre-roll tap to follow the take: \(error)")
        }
    }

    /// Ends every pre-roll whose app is not in `apps`.
    func releaseAll(except apps: Set<String>) {
        for app in held.keys where !apps.contains(app) { release(app) }
    }

    /// A level trigger's take of `app` starts at stream position `position` of its tap.
    func setTakeFrom(app: String, position: Int) { held[app]?.takeFrom = position }

    /// From the tick: each tap keeps only its last `frames` frames.
    func trim() {
        for (app, current) in held {
            let excess = current.tap.availableToRead - current.frames
            if excess > 0 { held[app]?.discarded += current.tap.discard(frames: excess) }
            Self.keepInStep(current.tap)
            guard let now = held[app] else { continue }
            held[app]?.gaps = Self.fold(now.gaps + now.tap.drainGaps(), before: now.discarded)
        }
    }

    /// A processed pre-roll's reference keeps the frames of the capture's periods and no older
    /// ones (both count from the same first period), so it never overruns while held. Its gaps
    /// are dropped: its clock stalls are the capture's too, and an overrun cannot happen here.
    private static func keepInStep(_ tap: CaptureTap) {
        guard let reference = tap.reference else { return }
        reference.discard(frames: tap.readPosition - reference.readPosition)
        _ = reference.drainGaps()
    }

    /// `gaps` with those at or before stream position `position` summed into one per cause at
    /// position 0 (a clock stall and an overrun count differently when a take's start is placed).
    static func fold(_ gaps: [CaptureGap], before position: Int) -> [CaptureGap] {
        var overrun = 0
        var stalled = 0
        var later: [CaptureGap] = []
        for gap in gaps {
            if gap.position > position {
                later.append(gap)
            } else if gap.cause == .clockStall {
                stalled += gap.length
            } else if gap.cause == .catchUp {
                stalled = max(0, stalled - gap.length)
            } else {
                overrun += gap.length
            }
        }
        var folded: [CaptureGap] = []
        if overrun > 0 { folded.append(CaptureGap(position: 0, length: overrun, frameTime: 0, cause: .overrun)) }
        if stalled > 0 { folded.append(CaptureGap(position: 0, length: stalled, frameTime: 0, cause: .clockStall)) }
        return folded + later
    }

    /// `record start` of `app` on `port` with `channels`: the pre-roll tap, trimmed to its
    /// pre-roll, leaves the keeper to become the recorder's (nil when there is none that fits).
    func take(app: String, port: String, channels: Int) -> Taken? {
        guard let current = held[app], current.port == port, current.channels == channels,
            current.tap.isAttached
        else { return nil }
        held.removeValue(forKey: app)
        if let following = next.removeValue(forKey: app) { held[app] = following }
        let excess =
            current.takeFrom.map { $0 - current.tap.readPosition }
            ?? (current.tap.availableToRead - current.frames)
        let discarded = current.discarded + current.tap.discard(frames: max(0, excess))
        Self.keepInStep(current.tap)
        return Taken(tap: current.tap, position: discarded, frames: current.tap.availableToRead, gaps: current.gaps)
    }
}
