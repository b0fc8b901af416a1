// Trusted time for the archive (docs/archive-proof.md, "Trusted time-stamps"): each day's chain
// head, as it advances, stamped by an RFC 3161 time-stamping authority (`[evidence] tsa_url`) —
// at most once per `tsa_interval_seconds` per chain, and at once when a stream's day closes (its
// next day's first segment is chained). The token is kept beside the chain as
// `<app>-<stream>.chain.<entries>.tsr`, so several stamps of a day coexist and each names the
// entry whose hash it stamps.
//
// No network, or no answer, never touches the recording: the stamps are asked on their own
// "time-stamper" thread, one at a time, from a queue of chains whose head is not stamped yet;
// a failure waits (0.5 s, doubled per failure in a row, at most one interval) and tries again.
// A head left waiting by a stop or a crash is found again at the next start and stamped then.
// The head stamped is recd's own record of what it signed (state_dir/chain-heads), not the
// archive's `.sig`, which an archive writer could replace.
//
// Threads: `TimeStampService` is the control thread's (segments, the tick, status,
// completions); `TimeStamper.stamp` runs on the time-stamper thread.
import Archive
import ArchiveProof
import ControlProtocol
import PKI
import Platform
import SystemSupport

/// How one stamping attempt ended. A plain value: any thread.
enum StampOutcome: Sendable, Equatable {
    /// A token for the head at `entries` was written (or was there already).
    case stamped(entries: Int, time: Int64?)
    /// recd has signed nothing of this chain: nothing to stamp.
    case nothingSigned
    case failed(String)
}

/// Asks for one chain head's token and writes it. A value: made on the control thread, used on
/// the time-stamper's.
struct TimeStamper: Sendable {
    let client: TimeStampClient
    let archiveDirectory: String
    let heads: ChainHeads

    /// The token file of the head at `entries` of `chain` (relative to the archive's root).
    static func tokenPath(chain: String, entries: Int) -> String { "\(chain).\(entries).tsr" }

    /// recd's signed heads of days from `oldestDay` (`YYYY/MM/DD`) on that no token stamps.
    /// Time-stamper thread: reads one small record per chain.
    func unstamped(since oldestDay: String) -> [String] {
        heads.chains().filter { chain in
            guard FileSystem.directoryName(of: chain) >= oldestDay,
                let signed = (try? heads.record(of: chain))??.signed
            else { return false }
            return !FileSystem.exists(archiveDirectory + "/" + Self.tokenPath(chain: chain, entries: signed.entries))
        }
    }

    /// Stamps what recd last signed of `chain`. Time-stamper thread; blocks for the exchange.
    func stamp(chain: String) -> StampOutcome {
        let signed: ChainHead
        do throws(ProofError) {
            guard let head = try heads.record(of: chain)?.signed else { return .nothingSigned }
            signed = head
        } catch {
            return .failed("recd's record of \(chain) cannot be read: \(error.message)")
        }
        let path = archiveDirectory + "/" + Self.tokenPath(chain: chain, entries: signed.entries)
        if FileSystem.exists(path) { return .stamped(entries: signed.entries, time: nil) }
        switch client.stamp(digest: signed.head.bytes) {
        case .failure(let error):
            return .failed(error.message)
        case .success(let answer):
            do throws(SystemError) {
                // Replaced by rename: a link put at the token's name is replaced, never followed.
                try AtomicFile.write(answer.response, to: path, mode: 0o644)
            } catch {
                return .failed("cannot write \(path): \(error.message); check the archive's permissions and space")
            }
            return .stamped(entries: signed.entries, time: answer.stamp.time)
        }
    }
}

/// The stamping queue: which chains' heads wait for a token, the attempt in flight, the backoff.
/// Made by `Recd.compose` only with `[evidence] tsa_url` and a key (there is no chain without).
///
/// Confined to the control thread (`@unchecked Sendable`: completions, which capture it, run
/// there too).
final class TimeStampService: SegmentFeature, DaemonFeature, @unchecked Sendable {
    let settings: EvidenceSection
    private let stamper: TimeStamper
    private let worker: SlowRequestWorker
    /// Chains recd heard advance this run, by their path under the root.
    private var chains: [String: ChainWait] = [:]
    /// The chain being stamped, and how many advances of it the attempt covers.
    private var inFlight: (chain: String, generation: Int)?
    private var failures = 0
    /// Monotonic seconds before which no attempt starts (the backoff).
    private var notBefore = 0.0
    private(set) var lastSuccess: Double?
    private(set) var lastError: String?
    private(set) var stampsWritten = 0

    /// One chain's state. A plain value of the service's.
    struct ChainWait {
        var app: String
        var stream: String
        /// The day folder (`YYYY/MM/DD`): a later day's segment closes this one.
        var day: String
        /// Advances heard; the head is stamped when an attempt covered the last of them.
        var generation = 0
        var stampedGeneration = 0
        /// Since when (Unix seconds) the oldest advance not stamped has waited.
        var unstampedSince: Double?
        /// The first advance heard while an attempt was in flight (it waits from then).
        var advancedDuringAttempt: Double?
        /// Monotonic seconds of the last token: the next waits an interval.
        var lastStamped: Double?
        /// The stream's next day has begun: the head is final, stamped without waiting.
        var closed = false

        var waiting: Bool { generation != stampedGeneration }
    }

    /// Starts the "time-stamper" thread.
    init(
        settings: EvidenceSection, pinnedFingerprint: String?, archiveDirectory: String, heads: ChainHeads,
        deliver: @escaping SlowRequestWorker.Deliver
    ) throws(SystemError) {
        self.settings = settings
        let client = TimeStampClient(
            urls: settings.tsaURLs, caFile: settings.tsaCAFile, pinnedFingerprint: pinnedFingerprint,
            connectTimeoutSeconds: min(5, settings.tsaIntervalSeconds),
            totalTimeoutSeconds: min(15, max(2, settings.tsaIntervalSeconds)))
        stamper = TimeStamper(client: client, archiveDirectory: archiveDirectory, heads: heads)
        worker = try SlowRequestWorker(name: "time-stamper", deliver: deliver)
        restoreWaiting()
    }

    /// How far back a start looks for heads left unstamped: chains of the last this many days.
    static let restoredDays = 7

    /// The heads recd signed in the last `restoredDays` days that no token stamps — left by a
    /// stop or a crash while the TSA was away, or before their interval came — wait again and
    /// are stamped at once: their chain's next advance, which would have stamped them, may never
    /// come (a day over, a recording stopped). recd's record and the tokens are the queue, so
    /// nothing of it is kept elsewhere. Looked for on the time-stamper's thread.
    private func restoreWaiting() {
        let stamper = stamper
        let oldest = Self.dayFolder(Int64(Self.wallSeconds()) - Int64(Self.restoredDays) * 86_400)
        worker.submit(for: nil, { _ in stamper.unstamped(since: oldest) }) { [weak self] found in
            self?.restored(found)
        }
    }

    private func restored(_ found: [String]) {
        let now = Self.wallSeconds()
        let today = Self.dayFolder(Int64(now))
        var added = 0
        for chain in found where chains[chain] == nil {
            let day = FileSystem.directoryName(of: chain)
            // The app and stream are learnt at the chain's next segment, if any comes.
            chains[chain] = ChainWait(
                app: "", stream: "", day: day, generation: 1, stampedGeneration: 0, unstampedSince: now,
                closed: day < today)
            added += 1
        }
        if added > 0 {
            Log.notice("time-stamps: \(Readable.count(added, "chain head")) signed before this start wait for a stamp")
        }
        pump()
    }

    /// A day's folder (`YYYY/MM/DD`, UTC) of a time in seconds since 1970.
    static func dayFolder(_ seconds: Int64) -> String {
        let iso = UTCTime(checkedSecondsSinceEpoch: seconds, nanoseconds: 0)?.iso8601 ?? "0000-00-00"
        return String(iso.prefix(10).map { $0 == "-" ? "/" : $0 })
    }

    /// The pin `tsa_certificate` names: a fingerprint as written, or the one of its PEM file.
    /// Nil without a pin; throws when the file cannot be read or holds no certificate.
    static func pin(of settings: EvidenceSection) throws(PKIError) -> String? {
        guard let pin = settings.tsaCertificate else { return nil }
        if !pin.hasPrefix("/") {
            guard let fingerprint = TimeStampToken.normalizedFingerprint(pin) else {
                throw PKIError("[evidence] tsa_certificate \(pin) is not a SHA-256 fingerprint")
            }
            return fingerprint
        }
        guard let fingerprint = Certificate.fingerprint(pem: try Certificate.readFile(pin)) else {
            throw PKIError("[evidence] tsa_certificate \(pin) holds no PEM certificate")
        }
        return fingerprint
    }

    /// A segment is chained (or could not be): its chain's head may have advanced.
    func segmentFinished(_ record: SegmentRecord) {
        guard !record.path.hasSuffix(SegmentWriter.partialSuffix),
            let relative = ChainLayout.relative(record.path, to: stamper.archiveDirectory)
        else { return }
        let chain = ChainLayout.chainPath(ofSegment: relative, app: record.app, stream: record.stream)
        let day = FileSystem.directoryName(of: relative)
        let now = Self.wallSeconds()
        var wait = chains[chain] ?? ChainWait(app: record.app, stream: record.stream, day: day)
        (wait.app, wait.stream) = (record.app, record.stream)
        if !wait.waiting { wait.unstampedSince = now }
        wait.generation += 1
        if inFlight?.chain == chain, wait.advancedDuringAttempt == nil { wait.advancedDuringAttempt = now }
        chains[chain] = wait
        // The stream's earlier days are over: their last heads are stamped now.
        for (other, earlier) in chains
        where earlier.app == record.app && earlier.stream == record.stream
            && earlier.day < day && !earlier.closed
        {
            chains[other]?.closed = true
        }
        pump()
    }

    func tick(now: Double) { pump() }

    func contribute(to status: inout StatusInfo) { status.timeStamps = self.status }

    var status: StatusInfo.TimeStamps {
        let waiting = chains.values.filter(\.waiting)
        let oldest = waiting.compactMap(\.unstampedSince).min()
        return StatusInfo.TimeStamps(
            urls: settings.tsaURLs, backlog: waiting.count,
            oldestUnstampedSeconds: oldest.map { max(0, Self.wallSeconds() - $0) }, lastSuccess: lastSuccess,
            lastError: lastError, stamps: stampsWritten, intervalSeconds: settings.tsaIntervalSeconds,
            alarmSeconds: settings.tsaAlarmMinutes * 60, caFile: settings.tsaCAFile)
    }

    /// Shutdown: an exchange in flight is abandoned (curl's own time limit ends it); what waits
    /// is stamped after the next start (`restoreWaiting`).
    func stop() { worker.stop() }

    private func pump() {
        let now = SystemClock.monotonicSeconds()
        guard inFlight == nil, now >= notBefore else { return }
        let due = chains.filter { _, wait in
            wait.waiting
                && (wait.closed || wait.lastStamped.map { now - $0 >= settings.tsaIntervalSeconds } ?? true)
        }
        guard
            let next = due.min(by: {
                ($0.value.unstampedSince ?? 0, $0.key) < ($1.value.unstampedSince ?? 0, $1.key)
            })
        else { return }
        let chain = next.key
        inFlight = (chain, next.value.generation)
        let stamper = stamper
        worker.submit(for: nil, { _ in stamper.stamp(chain: chain) }) { [weak self] outcome in
            self?.finished(chain, outcome)
        }
    }

    private func finished(_ chain: String, _ outcome: StampOutcome) {
        guard let attempt = inFlight, attempt.chain == chain, var wait = chains[chain] else { return }
        inFlight = nil
        let advancedMeanwhile = wait.advancedDuringAttempt
        wait.advancedDuringAttempt = nil
        switch outcome {
        case .stamped, .nothingSigned:
            if case .stamped(let entries, let time) = outcome, let time {
                stampsWritten += 1
                lastSuccess = Self.wallSeconds()
                if failures > 0 {
                    let at = UTCTime(checkedSecondsSinceEpoch: time, nanoseconds: 0)?.iso8601 ?? String(time)
                    Log.notice(
                        "time-stamps: \(chain) stamped up to entry \(entries) at \(at) "
                            + "after \(Readable.count(failures, "failed attempt"))")
                }
            }
            lastError = nil
            failures = 0
            notBefore = 0
            wait.lastStamped = SystemClock.monotonicSeconds()
            wait.stampedGeneration = attempt.generation
            wait.unstampedSince = wait.waiting ? advancedMeanwhile ?? Self.wallSeconds() : nil
        case .failed(let message):
            failures += 1
            let backoff = min(settings.tsaIntervalSeconds, 0.5 * Double(1 << min(failures - 1, 20)))
            notBefore = SystemClock.monotonicSeconds() + backoff
            lastError = message
            if failures & (failures - 1) == 0 {
                Log.warning(
                    "time-stamps: \(chain) not stamped: \(message); "
                        + "\(Readable.count(chains.values.filter(\.waiting).count, "chain head")) waiting, next try "
                        + "in \(Readable.duration(backoff)); recording goes on")
            }
        }
        if wait.closed && !wait.waiting {
            chains[chain] = nil
        } else {
            chains[chain] = wait
        }
        pump()
    }

    private static func wallSeconds() -> Double { Double(SystemClock.realtimeNanoseconds()) / 1e9 }
}
