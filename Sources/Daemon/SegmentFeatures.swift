// What reacts to the archive's segments, behind one small protocol: the recorder service says
// what happened (a segment opened or finished, a stream's silence or feed changed, a stream
// ended) to the list of features the composition root gives it, and knows none of them by name.
// The features: the archive's catalog (the control thread's index, `archive.list`, the status
// count), the prover (hash chains; it passes each segment on to its own features once chained,
// so a replica carries the chain that names it), replication, silence alarms, retention, the
// time source and level-triggered takes.
//
// Threads: the control thread, for every member.
import Archive
import ControlProtocol

/// A segment a recorder opened: its `.partial` is being written.
struct OpenedSegment: Equatable {
    var app: String
    var stream: String
    /// The finished segment's path (the file being written is this plus `.partial`).
    var path: String
    /// Its number within the recording (`SEGMENT`).
    var number: Int

    init(_ spec: RecorderSpec, path: String, number: Int) {
        (app, stream, self.path, self.number) = (spec.app, spec.stream, path, number)
    }
}

/// A change of a recorded stream, as a feature hears it.
enum StreamChange: Equatable {
    /// The archiver's silence detector decided the stream went silent or has sound again.
    case silence(SilenceChange)
    /// A recorder of the stream stopped by itself (disk full, a write error).
    case stoppedByItself(EndReason)
    /// The stream no longer records and does not wait to start again.
    case ended
}

/// A feature that hears the archive's segments and its recorded streams. Every member has a
/// default that does nothing: a feature implements what it hears.
protocol SegmentFeature: AnyObject {
    /// At start-up, after the partials a crash left were recovered (`recovered`, in the order
    /// they started).
    func archiveOpened(recovered: [SegmentRecord])
    /// A recorder of `spec` is about to start: what it adds to the recorder's configuration.
    func configure(
        _ configuration: inout RecorderConfiguration, inputs: inout SegmentInputs, for spec: RecorderSpec
    )
    func segmentOpened(_ segment: OpenedSegment)
    /// A segment is finished (by its recorder, or recovered from its `.partial`: `record.recovered`).
    func segmentFinished(_ record: SegmentRecord)
    func streamChanged(_ change: StreamChange, app: String, stream: String)
    /// Its part of a recorder's `RecorderInfo` (status, and the `record.stop` reply).
    func describe(_ info: inout RecorderInfo)
}

extension SegmentFeature {
    func archiveOpened(recovered: [SegmentRecord]) {}
    func configure(
        _ configuration: inout RecorderConfiguration, inputs: inout SegmentInputs, for spec: RecorderSpec
    ) {}
    func segmentOpened(_ segment: OpenedSegment) {}
    func segmentFinished(_ record: SegmentRecord) {}
    func streamChanged(_ change: StreamChange, app: String, stream: String) {}
    func describe(_ info: inout RecorderInfo) {}
}
