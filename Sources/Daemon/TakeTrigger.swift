// Level-triggered takes: an armed recorder waits for any channel's peak to
// reach its level, starts with its pre-roll, ends `hold` seconds after the level fell below,
// and arms again. Each take is its own run of segments.
//
// The level is looked at on the control thread, in the frames of the session's pre-roll tap
// (`CaptureTap.scanLevel`): the take's first and last frames are decided from the samples'
// positions, not from when the tick looked. A take's recorder reads no frame past its
// possible end (`TapSource.limit`), which moves on while the level stays up: the archiver
// never holds a frame after the hold ran out.
//
// Threads: the control thread only.
import AudioEngine
import ControlProtocol
import Foundation

/// One armed recorder, and its take while one runs.
struct ArmedTrigger {
    var app: String
    /// The stream name asked for; nil: the input port's name.
    var stream: String?
    /// The input asked for; nil: the session's route input.
    var input: String?
    var triggerDB: Double
    var holdSeconds: Double
    /// Stream position in the pre-roll tap looked at next for a crossing.
    var scanFrom = 0
    /// Stream position in the pre-roll tap before which no take begins (the previous take's
    /// end: takes do not overlap).
    var notBefore = 0
    /// The pre-roll tap those positions count in: a new tap (the route moved, JACK came
    /// back) counts from 0 again.
    var scanned: Int?
    var take: Take?

    /// A running take.
    struct Take {
        var recorder: RecorderStream
        /// JACK frame time of the take's first frame.
        var startFrameTime: UInt32
        /// Frames from the take's first frame to the last one that reached the level.
        var lastAbove: Int
        /// The pre-roll tap the level is watched in (a new one after the take started), and
        /// the position looked at next.
        var watched: Int?
        var watchFrom = 0
    }

    static let defaultHoldSeconds = 10.0
    static let triggerRange = -120.0...0.0
    static let holdRange = 0.0...86_400.0

    /// The level as a sample magnitude.
    var threshold: Float { Float(pow(10, triggerDB / 20)) }

    var fields: [(String, JSONValue)] {
        [
            ("app", .string(app)), ("stream", JSONValue(stream)), ("input", JSONValue(input)),
            ("triggerDB", .number(triggerDB)), ("holdSeconds", .number(holdSeconds)),
        ]
    }
}

/// What the recorders ask of level-triggered takes, whose owner (the take trigger feature) keeps
/// the sessions' pre-rolls and the armed triggers. Control thread.
protocol TakeSource: AnyObject {
    /// `app`'s pre-roll of `port` (its first `channels`), handed over to become a recorder's
    /// own tap; nil when there is none that fits.
    func takePreRoll(app: String, port: String, channels: Int) -> PreRollKeeper.Taken?
    /// Whether `app` is armed: a take that stops leaves its trigger armed, not a recorder waiting.
    func isArmed(_ app: String) -> Bool
}
