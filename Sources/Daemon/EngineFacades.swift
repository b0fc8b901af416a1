// What each service may ask of the engine, and how services talk to clients.
//
// Two sides, one protocol per service on each: the audio engine's calls a service makes
// (`PlayerEngine`, `RecorderEngine`, `MonitoringEngine`, `AttachmentEngine`, `MeterEngine`),
// which `AudioEngine` itself answers (the composition root hands each service the engine), and
// the configured ports (`EnginePorts`): port names ↔ JACK port groups and whether a port is
// available, which only `EngineController` knows. Services reach clients only through an
// `EventSink` (the router).
//
// Threads: the control thread, for every member of every protocol here.
import Archive
import AudioEngine
import ControlProtocol
import SessionPolicy

/// Where services send events for clients. The router implements it: an event goes to every
/// client watching its app (all of them, for a global event). Control thread.
protocol EventSink: AnyObject {
    /// Sends `event` to the watchers of its app (`Event.app`); a global event to every watcher.
    func broadcast(_ event: Event)
}

/// An output port as the engine plays to it.
struct EngineOutput: Equatable {
    /// The JACK port group (a duplex port's earpiece group is `NAME_out`).
    var group: String
    /// Channels of the output side (a duplex port's earpiece may differ from its microphone).
    var channels: Int
}

/// The configured ports as services see them: the engine controller's (port ↔ group, the one
/// source of port availability, device arrivals and losses, the network behind a port).
protocol EnginePorts: AnyObject {
    /// Whether a configured port is available now (the one source of port availability).
    func isAvailable(port name: String) -> Bool
    /// The output side of a configured port; nil for an unknown port or an input.
    func output(port name: String) -> EngineOutput?
    /// The input group of a configured port; nil for an unknown port or an output.
    func inputGroup(port name: String) -> String?
    /// The configured ports that can capture, by name (what a bus source may be).
    var inputPortNames: [String] { get }
    /// Some output group, for an attachment whose session has no output route yet (its voice
    /// stays paused until it has one).
    var anyOutputGroup: String? { get }
    /// Frames since JACK announced the latest port loss; nil when none was heard of.
    func portLossReaction() -> PortReaction?
    /// Frames since the latest device arrival was heard of (a JACK port registered, or a jack
    /// sense saying plugged); nil when none was.
    func portArrivalReaction() -> PortReaction?
    /// The network's facts about a configured input port's audio (an RTP stream's packets and
    /// network losses); nil for audio of this machine.
    func networkReception(port name: String) -> (any NetworkReception)?
}

/// The engine as `PlayerService` uses it.
protocol PlayerEngine: AnyObject {
    var isRunning: Bool { get }
    /// The JACK rate players play at; nil when not running.
    var sampleRate: Int? { get }
    func addPlayer(
        channels: Int, outputGroup: String, routes: [PlayerRoute]?, bufferFrames: Int?, gainDecibels: Double
    ) throws(AudioEngineError) -> PlayerHandle
    func play(_ player: PlayerHandle, rampMilliseconds: Double)
    func pause(_ player: PlayerHandle, rampMilliseconds: Double)
    func setGain(_ player: PlayerHandle, decibels: Double, rampMilliseconds: Double)
    func removePlayer(_ player: PlayerHandle)
    /// Once the reconciler has connected `outputGroup` (`moved` then runs, on the control
    /// thread) the player plays there from the next period, crossfading over the ramp.
    func movePlayer(
        _ player: PlayerHandle, toOutputGroup outputGroup: String, routes: [PlayerRoute]?, rampMilliseconds: Double,
        moved: (() -> Void)?
    ) throws(AudioEngineError)
}

/// The engine as `RecorderService` uses it (its pre-roll taps and voice processing too).
protocol RecorderEngine: AnyObject {
    var isRunning: Bool { get }
    var sampleRate: Int? { get }
    /// A tap on `channels` of an input group (all: nil) whose ring holds `bufferFrames` (two
    /// seconds: nil); with `referenceOutputGroup`, an output group, it carries a reference tap
    /// of that group (its far end, for voice processing).
    func addCaptureTap(
        inputGroup: String, channels: [Int]?, bufferFrames: Int?, zeroed: Bool, referenceOutputGroup: String?
    ) throws(AudioEngineError) -> CaptureTap
    /// Removes `old` and adds a tap on `inputGroup` in one graph snapshot (adjacent periods).
    func replaceCaptureTap(
        _ old: CaptureTap, inputGroup: String, channels: [Int]?, bufferFrames: Int?, zeroed: Bool,
        referenceOutputGroup: String?
    ) throws(AudioEngineError) -> CaptureTap
    /// The latency JACK reports for an engine group (capture latency of an input group,
    /// playback latency of an output group), seconds; nil when not running or unknown.
    func latencySeconds(ofGroup group: String) -> Double?
    func addBusTap(_ bus: Bus, bufferFrames: Int?) throws(AudioEngineError) -> CaptureTap
    func setZeroed(_ tap: CaptureTap, _ zeroed: Bool)
    func removeCaptureTap(_ tap: CaptureTap)
    /// The UTC time of a JACK frame time (a tap's first frame); nil when not running.
    func utcNanoseconds(forFrameTime frameTime: UInt32) -> AudioEngine.FrameWallTime?
}

/// The recorder's taps by channel count, as its callers count them.
extension RecorderEngine {
    /// A tap on the first `channels` channels of an input group.
    func addCaptureTap(inputGroup: String, channels: Int, zeroed: Bool, reference: String?)
        throws(AudioEngineError) -> CaptureTap
    {
        try addCaptureTap(
            inputGroup: inputGroup, channels: Array(0..<max(channels, 1)), bufferFrames: nil, zeroed: zeroed,
            referenceOutputGroup: reference)
    }

    /// A tap whose ring holds `frames` frames (a pre-roll tap), allocated here, off the process
    /// thread.
    func addCaptureTap(inputGroup: String, channels: Int, zeroed: Bool, frames: Int, reference: String?)
        throws(AudioEngineError) -> CaptureTap
    {
        try addCaptureTap(
            inputGroup: inputGroup, channels: Array(0..<max(channels, 1)), bufferFrames: frames, zeroed: zeroed,
            referenceOutputGroup: reference)
    }

    func replaceCaptureTap(_ old: CaptureTap, inputGroup: String, channels: Int, zeroed: Bool, reference: String?)
        throws(AudioEngineError) -> CaptureTap
    {
        try replaceCaptureTap(
            old, inputGroup: inputGroup, channels: Array(0..<max(channels, 1)), bufferFrames: nil, zeroed: zeroed,
            referenceOutputGroup: reference)
    }

    func addBusTap(_ bus: Bus) throws(AudioEngineError) -> CaptureTap { try addBusTap(bus, bufferFrames: nil) }
}

/// The engine as `MonitoringService` uses it.
protocol MonitoringEngine: AnyObject {
    var isRunning: Bool { get }
    func setMonitoring(_ setup: MonitoringSetup, rampMilliseconds: Double) throws(AudioEngineError)
}

/// The engine as `DeviceService` uses it: jack sense gates a port's availability.
protocol SenseEngine: AnyObject {
    /// A jack-sense control of `port` says plugged or not (nil: no control, JACK alone decides).
    func setSensePlugged(port: String, _ plugged: Bool?)
}

/// The engine as `MeterService` uses it.
protocol MeterEngine: AnyObject {
    var isRunning: Bool { get }
    /// Whether the process thread measures the input and output meters.
    var metersActive: Bool { get set }
    /// Peak and RMS of every channel since the previous call.
    func meters() -> [MeterReading]
}

/// The engine as `AttachmentService` uses it: applications' own JACK clients under sessions.
/// Their play side is a player voice, steered with the player calls.
protocol AttachmentEngine: AnyObject {
    var isRunning: Bool { get }
    /// Frames per period and per second (nil when not running).
    var bufferSize: Int? { get }
    var sampleRate: Int? { get }
    /// Starts an attach: the ports are registered off the control thread, the handle comes
    /// from `finishedAttachments` (see `AudioEngine.beginAttach`).
    func beginAttach(
        client: String, playPorts: [String], capturePorts: [String], outputGroup: String?, routes: [PlayerRoute]?,
        gainDecibels: Double
    ) throws(AudioEngineError) -> AttachmentTicket
    func finishedAttachments() -> [(AttachmentTicket, Result<AttachmentHandle, AudioEngineError>)]
    func detach(_ handle: AttachmentHandle)
    func play(_ player: PlayerHandle, rampMilliseconds: Double)
    func pause(_ player: PlayerHandle, rampMilliseconds: Double)
    func setGain(_ player: PlayerHandle, decibels: Double, rampMilliseconds: Double)
    func movePlayer(
        _ player: PlayerHandle, toOutputGroup outputGroup: String, routes: [PlayerRoute]?, rampMilliseconds: Double,
        moved: (() -> Void)?
    ) throws(AudioEngineError)
    /// Capture ports carry `inputGroup`'s channels while `open`, zeros otherwise.
    func setCapture(_ handle: AttachmentHandle, inputGroup: String?, open: Bool)
    /// From the next period the capture ports carry `inputGroup` processed against
    /// `referenceOutputGroup` at a fixed delay (`AudioEngine.processCapture`); the caller's
    /// worker does the processing.
    func processCapture(
        _ handle: AttachmentHandle, inputGroup: String, referenceOutputGroup: String, slackFrames: Int
    ) throws(AudioEngineError) -> ProcessedCapture
    /// The capture ports carry the raw input again from the next period.
    func unprocessCapture(_ handle: AttachmentHandle)
    /// The latency JACK reports for an engine group, seconds (the echo path's delay).
    func latencySeconds(ofGroup group: String) -> Double?
    /// Has the connection reconciler remove connections that would bypass recd (off the control
    /// thread); returns those removed since the last call.
    func enforceAttachments() -> [JackConnection]
    func attachmentsWithMissingPorts() -> [AttachmentHandle]
    /// The process id behind a JACK client, when the server tells (nil: it does not).
    func processID(ofClient name: String) -> Int32?
}

/// The audio engine answers each service's calls itself: no layer passes them on.
extension AudioEngine: PlayerEngine, RecorderEngine, MonitoringEngine, MeterEngine, AttachmentEngine {}
