// How the services and the features talk to the session coordinator: facts in, effects out.
//
// A service reports a fact (`ServiceFact`) whenever its state changes in a way the policy reads
// (a player started or paused, a recorder stopped, an attached application became audible);
// it never tells the policy what it means, and never copies anything into the store. The
// coordinator turns the fact into the policy's input (`PolicyFact`, read from the services at
// that moment), and every effect the policy answers with goes out by one path (`dispatch`).
//
// Features beside the policy (meters, replication, retention, silence alarms, the prover, the
// time source, level-triggered takes with their pre-rolls) are `DaemonFeature`s: they run from
// the tick, hear every effect, add to `status`, and stop at shutdown in the reverse order of the
// list. Those that hear the archive's segments are `SegmentFeature`s too (SegmentFeatures.swift).
//
// Threads: the control thread, for every member of every protocol here.
import ControlProtocol
import SessionPolicy

/// Something a service or the system observed that the policy reads. A fact carries no
/// picture of its own: the coordinator reads the whole picture from the services when it takes
/// the fact in, so a fact reported twice changes nothing.
enum ServiceFact: Equatable {
    /// A player, recorder or attachment started, paused, resumed, stopped, ended, or became
    /// audible or silent: which apps have streams running and which are heard.
    case streams
    /// A port came or went (the engine's port groups, a jack-sense switch).
    case ports
    /// A capture switch muted or unmuted a port's input in hardware.
    case hardwareMute(port: String, muted: Bool)
    /// A process's last control connection closed (exit, crash, SIGKILL, or it let go).
    case processEnded(pid: Int32)
}

/// Where services report facts: the coordinator. Control thread.
protocol FactSink: AnyObject {
    func report(_ fact: ServiceFact)
}

/// A feature beside the session policy, behind one small protocol: the coordinator ticks it,
/// hands it every policy effect after the services had it, and asks for its part of `status`.
protocol DaemonFeature: AnyObject {
    /// From the control thread's tick.
    func tick(now: Double)
    /// One policy effect, after the services acted on it.
    func handle(_ effect: PolicyEffect)
    /// Its part of `status` (and so of `/metrics` and the status page).
    func contribute(to status: inout StatusInfo)
    /// Whether it needs the 100 ms tick now (something it polls is under way).
    var wantsFrequentTicks: Bool { get }
    /// At shutdown, after the recorders finished their files: its threads end.
    func stop()
}

extension DaemonFeature {
    func tick(now: Double) {}
    func stop() {}
    func handle(_ effect: PolicyEffect) {}
    func contribute(to status: inout StatusInfo) {}
    var wantsFrequentTicks: Bool { false }
}

/// What a service that runs streams talks to: clients (events) and the policy (facts).
typealias ServiceSink = EventSink & FactSink

/// How a request answered later replies (`Answer.later`): its fields, or the error it threw;
/// dropped by the front end when the client has gone.
typealias LaterReply = @Sendable (Result<[(String, JSONValue)], SessionError>) -> Void
