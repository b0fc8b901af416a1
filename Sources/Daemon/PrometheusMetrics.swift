// `GET /metrics`: recd's state in the Prometheus text exposition format 0.0.4. A pure
// function of a snapshot the control thread builds (`SessionCoordinator.metricsSnapshot`), so a
// test can render any state without a daemon.
import ControlProtocol
import Foundation
import NetworkAudio
import SessionPolicy

/// What the metrics are made of, copied on the control thread.
struct MetricsSnapshot: Sendable {
    /// Off-box replication, when a remote is set: the two replication
    /// metrics are rendered only when this is present.
    struct Replication: Sendable, Equatable {
        /// Finished segments not yet copied to the remote.
        var backlogSegments: Int
        /// When a copy last succeeded (Unix seconds); nil: never.
        var lastSuccessUnixSeconds: Double?
    }

    /// One input channel's peak over the last tick.
    struct InputPeak: Sendable, Equatable {
        /// The config's `[port NAME]`.
        var port: String
        /// 1-based.
        var channel: Int
        var peakDB: Double
    }

    var status: StatusInfo
    /// Empty while JACK is gone.
    var inputPeaks: [InputPeak]
    var replication: Replication?
    /// The RTP streams recd's monitor listens to (on PipeWire), by JACK client.
    var rtpStreams: [RTPStreamFacts] = []
}

/// Renders `MetricsSnapshot`s as Prometheus text (version 0.0.4).
enum PrometheusMetrics {
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// One metric family: HELP, TYPE and its samples (labels, value).
    private struct Family {
        var name: String
        var help: String
        var type: String
        /// `suffix`: a histogram's `_bucket`, `_sum` and `_count` samples.
        var samples: [(suffix: String, labels: [(String, String)], value: Double)] = []

        init(_ name: String, _ type: String, _ help: String) {
            self.name = name
            self.type = type
            self.help = help
        }

        mutating func add(_ value: Double, _ labels: [(String, String)] = [], suffix: String = "") {
            samples.append((suffix, labels, value))
        }

        /// A histogram's samples from per-bucket counts (not cumulative; the last is +Inf) of
        /// values in µs, with bounds in µs, rendered in seconds.
        mutating func addHistogram(boundsMicros: [Int], counts: [Int], sumMicros: Int) {
            var cumulative = 0
            for (index, count) in counts.enumerated() {
                cumulative += count
                let bound =
                    index < boundsMicros.count ? PrometheusMetrics.format(Double(boundsMicros[index]) / 1e6) : "+Inf"
                add(Double(cumulative), [("le", bound)], suffix: "_bucket")
            }
            add(Double(sumMicros) / 1e6, suffix: "_sum")
            add(Double(cumulative), suffix: "_count")
        }

        var text: String {
            var out = "# HELP \(name) \(PrometheusMetrics.escapeHelp(help))\n# TYPE \(name) \(type)\n"
            for sample in samples {
                out += name + sample.suffix
                if !sample.labels.isEmpty {
                    out += "{"
                    out += sample.labels.map { "\($0.0)=\"\(PrometheusMetrics.escapeLabel($0.1))\"" }.joined(
                        separator: ",")
                    out += "}"
                }
                out += " \(PrometheusMetrics.format(sample.value))\n"
            }
            return out
        }
    }

    static func render(_ snapshot: MetricsSnapshot) -> String {
        let status = snapshot.status
        var families: [Family] = []
        var up = Family("recd_up", "gauge", "1 while recd answers.")
        up.add(1)
        families.append(up)
        var jack = Family("recd_jack_connected", "gauge", "1 while recd is connected to its JACK server.")
        jack.add(status.jack.connected ? 1 : 0)
        families.append(jack)
        var jackStalled = Family(
            "recd_jack_stalled", "gauge",
            "1 while recd's JACK server runs no process cycle (stall_seconds): stopped or hung, though connected.")
        jackStalled.add(status.jack.stalledSince == nil ? 0 : 1)
        families.append(jackStalled)
        if let health = status.health { families += healthFamilies(health) }
        var xruns = Family("recd_xruns_total", "counter", "JACK xruns seen since recd connected.")
        // recd's own status: every figure is there (the optional types are the wire's).
        if let count = status.jack.xruns { xruns.add(Double(count)) }
        families.append(xruns)
        if let cycle = status.jack.cycle {
            var delay = Family(
                "recd_process_cycle_start_delay_seconds", "histogram",
                "How late recd's JACK cycles started: from the cycle's start to recd's callback (the clients before "
                    + "recd, the kernel's wake-up). Since recd connected.")
            delay.addHistogram(
                boundsMicros: cycle.boundsMicros, counts: cycle.startDelay, sumMicros: cycle.startDelayMicrosTotal)
            var duration = Family(
                "recd_process_cycle_duration_seconds", "histogram",
                "How long recd's work in each JACK cycle took (its process callback). Since recd connected.")
            duration.addHistogram(
                boundsMicros: cycle.boundsMicros, counts: cycle.duration, sumMicros: cycle.durationMicrosTotal)
            var late = Family(
                "recd_process_cycles_late_total", "counter",
                "recd's JACK cycles that ended after the next cycle's start (JACK's deadline). Since recd connected.")
            late.add(Double(cycle.late))
            var overlong = Family(
                "recd_process_cycles_overlong_total", "counter",
                "recd's JACK cycles whose work alone took longer than the period (late however early they started). "
                    + "Since recd connected.")
            overlong.add(Double(cycle.overlong))
            families += [delay, duration, late, overlong]
        }
        if let clock = status.clock {
            var synchronized = Family(
                "recd_clock_synchronized", "gauge",
                "1 while the kernel keeps the wall clock synchronised (adjtimex: no STA_UNSYNC); 0: segment times "
                    + "are only as good as a free-running clock.")
            synchronized.add(clock.synchronized ? 1 : 0)
            var maximum = Family(
                "recd_clock_max_error_seconds", "gauge", "The wall clock's maximum error the kernel holds (maxerror).")
            if let error = clock.maximumErrorSeconds { maximum.add(error) }
            families += [synchronized, maximum]
        }
        var sessions = Family("recd_sessions_active", "gauge", "Active audio sessions.")
        sessions.add(Double(status.active.count))
        families.append(sessions)

        var recording = Family("recd_recording", "gauge", "1 for each stream being recorded.")
        var seconds = Family(
            "recd_recorded_seconds_total", "counter", "Seconds recorded by the stream's recorder since it started.")
        var overruns = Family(
            "recd_recorder_overruns_total", "counter", "Times the stream's capture ring overflowed (audio lost).")
        var silence = Family("recd_silence", "gauge", "1 while the stream's input is silent (silence detection).")
        var stalled = Family(
            "recd_recorder_stalled", "gauge", "1 while the stream's source delivers no frames (stall_seconds).")
        for recorder in status.recorders {
            let labels = [("app", recorder.app), ("stream", recorder.stream)]
            recording.add(1, labels)
            if let value = recorder.seconds { seconds.add(value, labels) }
            if let count = recorder.overruns { overruns.add(Double(count), labels) }
            silence.add(recorder.silentSince == nil ? 0 : 1, labels)
            stalled.add(recorder.stalledSince == nil ? 0 : 1, labels)
        }
        families += [recording, seconds, overruns, silence, stalled]
        var waiting = Family(
            "recd_recorder_waiting", "gauge",
            "1 for each recorder that is not running (status's waiting), by reason: diskFull, inputGone, ...")
        for entry in status.waiting {
            waiting.add(1, [("app", entry.app), ("stream", entry.stream), ("reason", entry.reason)])
        }
        families.append(waiting)

        var peaks = Family("recd_input_peak_dbfs", "gauge", "Input peak level over the last tick, dBFS (floor -120).")
        for peak in snapshot.inputPeaks {
            peaks.add(peak.peakDB, [("port", peak.port), ("channel", String(peak.channel))])
        }
        families.append(peaks)

        var alarms = Family(
            "recd_archive_chain_alarms", "gauge",
            "1 for each chain that does not hold what recd signed (status's archive.chainAlarms): recd chains "
                + "nothing more into it.")
        for alarm in status.archive.chainAlarms {
            alarms.add(1, [("chain", alarm.chain), ("app", alarm.app), ("stream", alarm.stream)])
        }
        var unrecovered = Family(
            "recd_archive_unrecovered_partials", "gauge",
            "Partial segments whose recovery failed, waiting to be recovered again (status's archive.unrecovered).")
        unrecovered.add(Double(status.archive.unrecovered.count))
        families += [alarms, unrecovered]

        if let space = status.archive.space {
            var free = Family("recd_archive_free_bytes", "gauge", "Free bytes on the archive's file system.")
            free.add(space.freeBytes)
            families.append(free)
            if let count = space.segments {
                var segments = Family("recd_archive_segments", "gauge", "Segments in the archive index.")
                segments.add(Double(count))
                families.append(segments)
            }
        }

        if !snapshot.rtpStreams.isEmpty {
            var received = Family(
                "recd_rtp_packets_received_total", "counter",
                "Packets of the RTP stream recd's monitor received (each sequence number once).")
            var lost = Family(
                "recd_rtp_packets_lost_total", "counter",
                "Packets of the RTP stream that never came (sequence numbers skipped; a link cut's too), "
                    + "less those recd's own socket dropped (recd_rtp_packets_unheard_total).")
            // Network losses; the metric keeps the name it was documented with.
            var losses = Family(
                "recd_rtp_silences_total", "counter",
                "Network losses: times the RTP stream's packets stopped for longer than max(20 ms, 4 packet times).")
            var ignored = Family(
                "recd_rtp_datagrams_ignored_total", "counter",
                "Datagrams on the RTP stream's group and port that did not count: from another address than "
                    + "its sender's, of another SSRC, not RTP, or a jump beyond what the time allows.")
            var unheard = Family(
                "recd_rtp_packets_unheard_total", "counter",
                "Packets of the RTP stream that recd's own monitor socket dropped (its receive buffer full: "
                    + "the monitor fell behind, not the network); not in recd_rtp_packets_lost_total.")
            for stream in snapshot.rtpStreams.sorted(by: { $0.label < $1.label }) {
                let labels = [("session", stream.label)]
                received.add(Double(stream.packets), labels)
                lost.add(Double(stream.lost), labels)
                losses.add(Double(stream.lossCount), labels)
                ignored.add(Double(stream.ignored), labels)
                unheard.add(Double(stream.unheard), labels)
            }
            families += [received, lost, losses, ignored, unheard]
        }

        if let replication = snapshot.replication {
            var backlog = Family(
                "recd_replication_backlog_segments", "gauge", "Finished segments not yet copied to the remote.")
            backlog.add(Double(replication.backlogSegments))
            families.append(backlog)
            if let last = replication.lastSuccessUnixSeconds {
                var success = Family(
                    "recd_replication_last_success_timestamp_seconds", "gauge",
                    "When a copy to the remote last succeeded (Unix time).")
                success.add(last)
                families.append(success)
            }
        }
        if let stamps = snapshot.status.timeStamps {
            var backlog = Family(
                "recd_tsa_backlog", "gauge", "Chains whose latest signed head has no RFC 3161 time-stamp yet.")
            backlog.add(Double(stamps.backlog))
            var oldest = Family(
                "recd_tsa_oldest_unstamped_seconds", "gauge",
                "How long the oldest chain advance without a time-stamp has waited (0: none waits).")
            oldest.add(stamps.oldestUnstampedSeconds ?? 0)
            var written = Family("recd_tsa_stamps_total", "counter", "Time-stamp tokens written since recd started.")
            written.add(Double(stamps.stamps))
            families += [backlog, oldest, written]
        }
        return families.map(\.text).joined()
    }

    /// The box's health as `status` has it: `recd_health_state` (0 ok, 1 warning, 2 alarm) and
    /// one `recd_health` series per reason, valued 1, labelled with its scope (`box` or `feed`),
    /// feed, reason and state.
    private static func healthFamilies(_ health: HealthInfo) -> [Family] {
        var state = Family(
            "recd_health_state", "gauge",
            "The box's health: 0 ok, 1 warning, 2 alarm (the same state as /api/health and recctl status).")
        state.add(Double(HealthState(rawValue: health.state)?.level ?? 2))
        var reasons = Family(
            "recd_health", "gauge",
            "1 for each reason the box or a feed is not ok (reason: jack-stalled, silent, disk-low, ...).")
        for reason in health.reasons {
            var labels = [("scope", reason.feed == nil ? "box" : "feed")]
            if let feed = reason.feed { labels.append(("feed", feed)) }
            labels += [("reason", reason.reason), ("state", reason.state)]
            reasons.add(1, labels)
        }
        return [state, reasons]
    }

    /// A label value: backslash, double quote and line feed escaped (`\\`, `\"`, `\n`).
    static func escapeLabel(_ value: String) -> String {
        var out = ""
        for character in value {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }

    /// HELP text: backslash and line feed escaped.
    static func escapeHelp(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }

    /// A sample value: whole numbers without a fraction; NaN and infinities as Prometheus spells them.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}
