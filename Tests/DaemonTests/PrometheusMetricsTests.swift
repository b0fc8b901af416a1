// `GET /metrics`'s text from a made-up state: every family with HELP and TYPE, labels escaped,
// the replication lines only when replication is on. (promtool and a real Prometheus read the
// real daemon's text in EndToEndTests/HTTPTests.swift.)
import ControlProtocol
import NetworkAudio
import Testing

@testable import Daemon

@Suite("Prometheus metrics text")
struct PrometheusMetricsTests {
    static func status(recorders: [RecorderInfo], jackConnected: Bool = true, segments: Int? = 12) -> StatusInfo {
        StatusInfo(
            daemon: .init(
                version: "1", protocolVersion: 2, pid: 1, uptime: 5, config: "c", socket: "s", stateDir: "d",
                archiveDir: "a"),
            jack: .init(
                connected: jackConnected, client: "recd", server: "default", sampleRate: 48_000, bufferSize: 1024,
                xruns: 3, mediaServicesAvailable: jackConnected, error: nil),
            sessions: [], active: ["logger", "dj"], players: [], recorders: recorders, cards: [],
            archive: .init(
                dir: "/a", space: .init(freeBytes: 5e9, freePercent: 40, segments: segments),
                chainAlarms: [
                    .init(
                        chain: "2026/12/01/logger-main.chain", app: "logger", stream: "main",
                        since: "2026-12-01T15:00:00Z",
                        detail: "chain 2026/12/01/logger-main.chain does not hold what recd signed",
                        segmentsUnchained: 2)
                ],
                unrecovered: [
                    .init(
                        path: "/a/x.flac.partial", since: "2026-12-01T15:00:00Z", error: "disk full",
                        resumesWhen: "1 MiB")
                ]),
            waiting: [
                .init(
                    app: "logger", stream: "desk", port: "desk", reason: "diskFull", since: "2026-12-01T15:00:00Z",
                    declared: true, resumesWhen: "16 MiB are free in /a (1.0 MiB now)")
            ])
    }

    static func recorder(_ app: String, _ stream: String, silent: Bool = false, stalled: Bool = false) -> RecorderInfo {
        RecorderInfo(
            app: app, stream: stream, port: "mic", bandwidth: "full", sampleRate: 48_000, files: [], seconds: 61,
            segments: 2, gaps: 0, overruns: 4, droppedFrames: 0, zeroed: false,
            silentSince: silent ? "2026-12-01T15:00:00Z" : nil, stalledSince: stalled ? "2026-12-01T15:01:00Z" : nil)
    }

    @Test("every family has HELP and TYPE; samples carry app/stream and port/channel labels; values as written")
    func families() {
        let text = PrometheusMetrics.render(
            MetricsSnapshot(
                status: Self.status(recorders: [
                    Self.recorder("logger", "main", silent: true), Self.recorder("dj", "deck", stalled: true),
                ]),
                inputPeaks: [.init(port: "mic", channel: 1, peakDB: -12.25)], replication: nil))
        for (name, type) in [
            ("recd_up", "gauge"), ("recd_jack_connected", "gauge"), ("recd_xruns_total", "counter"),
            ("recd_sessions_active", "gauge"), ("recd_recording", "gauge"), ("recd_recorded_seconds_total", "counter"),
            ("recd_recorder_overruns_total", "counter"), ("recd_input_peak_dbfs", "gauge"), ("recd_silence", "gauge"),
            ("recd_archive_free_bytes", "gauge"), ("recd_archive_segments", "gauge"),
            ("recd_recorder_waiting", "gauge"), ("recd_recorder_stalled", "gauge"),
            ("recd_archive_chain_alarms", "gauge"), ("recd_archive_unrecovered_partials", "gauge"),
        ] {
            #expect(text.contains("# HELP \(name) "), "HELP \(name)")
            #expect(text.contains("# TYPE \(name) \(type)\n"), "TYPE \(name)")
        }
        for line in [
            "recd_up 1", "recd_jack_connected 1", "recd_xruns_total 3", "recd_sessions_active 2",
            "recd_recording{app=\"logger\",stream=\"main\"} 1",
            "recd_recorded_seconds_total{app=\"logger\",stream=\"main\"} 61",
            "recd_recorder_overruns_total{app=\"logger\",stream=\"main\"} 4",
            "recd_silence{app=\"logger\",stream=\"main\"} 1",
            "recd_recorder_stalled{app=\"logger\",stream=\"main\"} 0",
            "recd_recorder_stalled{app=\"dj\",stream=\"deck\"} 1",
            "recd_input_peak_dbfs{port=\"mic\",channel=\"1\"} -12.25", "recd_archive_free_bytes 5000000000",
            "recd_archive_segments 12", "recd_recorder_waiting{app=\"logger\",stream=\"desk\",reason=\"diskFull\"} 1",
            "recd_archive_chain_alarms{chain=\"2026/12/01/logger-main.chain\",app=\"logger\",stream=\"main\"} 1",
            "recd_archive_unrecovered_partials 1",
        ] {
            #expect(text.contains(line + "\n"), "\(line) in:\n\(text)")
        }
        #expect(!text.contains("recd_replication"), "no replication lines without replication")
        #expect(text.hasSuffix("\n"))
    }

    @Test("the clock: synchronised or not, and its maximum error, only when status has it")
    func clock() {
        var status = Self.status(recorders: [])
        #expect(
            !PrometheusMetrics.render(MetricsSnapshot(status: status, inputPeaks: [], replication: nil)).contains(
                "recd_clock"))
        status.clock = StatusInfo.Clock(synchronized: false, estimatedErrorSeconds: 0.5, maximumErrorSeconds: 16, source: "none")
        let text = PrometheusMetrics.render(MetricsSnapshot(status: status, inputPeaks: [], replication: nil))
        #expect(text.contains("# TYPE recd_clock_synchronized gauge\nrecd_clock_synchronized 0\n"), "\(text)")
        #expect(text.contains("recd_clock_max_error_seconds 16\n"), "\(text)")
    }

    @Test("the process cycle histograms: cumulative buckets in seconds, +Inf equals the count, the sum in seconds")
    func cycleHistograms() {
        var status = Self.status(recorders: [])
        #expect(!PrometheusMetrics.render(MetricsSnapshot(status: status, inputPeaks: [], replication: nil)).contains(
            "recd_process_cycle"))
        status.jack.cycle = StatusInfo.CycleTimes(
            boundsMicros: [25, 50, 100], startDelay: [5, 3, 0, 2], duration: [9, 1, 0, 0], maxStartDelayMicros: 4000,
            maxDurationMicros: 40, late: 2, overlong: 1, cycles: 10, startDelayMicrosTotal: 8_200, durationMicrosTotal: 150)
        let text = PrometheusMetrics.render(MetricsSnapshot(status: status, inputPeaks: [], replication: nil))
        for line in [
            "# TYPE recd_process_cycle_start_delay_seconds histogram",
            "recd_process_cycle_start_delay_seconds_bucket{le=\"2.5e-05\"} 5",
            "recd_process_cycle_start_delay_seconds_bucket{le=\"5e-05\"} 8",
            "recd_process_cycle_start_delay_seconds_bucket{le=\"0.0001\"} 8",
            "recd_process_cycle_start_delay_seconds_bucket{le=\"+Inf\"} 10",
            "recd_process_cycle_start_delay_seconds_sum 0.0082", "recd_process_cycle_start_delay_seconds_count 10",
            "recd_process_cycle_duration_seconds_bucket{le=\"5e-05\"} 10",
            "recd_process_cycle_duration_seconds_sum 0.00015", "recd_process_cycles_late_total 2", "recd_process_cycles_overlong_total 1",
        ] {
            #expect(text.contains(line + "\n"), "\(line) in:\n\(text)")
        }
    }

    @Test("label values escape backslash, double quote and line feed")
    func escaping() {
        #expect(PrometheusMetrics.escapeLabel(#"a\b"c"# + "\nd") == #"a\\b\"c\nd"#)
        let text = PrometheusMetrics.render(
            MetricsSnapshot(
                status: Self.status(recorders: [Self.recorder("odd\"app", "back\\slash")], jackConnected: false),
                inputPeaks: [], replication: nil))
        #expect(text.contains(#"recd_recording{app="odd\"app",stream="back\\slash"} 1"#), "\(text)")
        #expect(text.contains("recd_jack_connected 0\n"))
    }

    @Test("RTP streams: packets received and lost and network losses by session, only while the monitor listens to one")
    func rtpStreams() throws {
        let status = Self.status(recorders: [])
        #expect(
            !PrometheusMetrics.render(MetricsSnapshot(status: status, inputPeaks: [], replication: nil))
                .contains("recd_rtp_"))
        var stream = RTPStreamFacts(
            session: "studio2", address: "10.231.0.2", group: "239.255.42.1", port: 46000, packetMicros: 1000,
            lossMicros: 20_000, latencyMicros: 100_000)
        stream.packets = 9000
        stream.lost = 35
        stream.lossCount = 1
        stream.ignored = 12
        let text = PrometheusMetrics.render(
            MetricsSnapshot(status: status, inputPeaks: [], replication: nil, rtpStreams: [stream]))
        #expect(text.contains("# TYPE recd_rtp_packets_received_total counter\n"))
        #expect(text.contains("recd_rtp_packets_received_total{session=\"studio2@10.231.0.2\"} 9000\n"))
        #expect(text.contains("recd_rtp_packets_lost_total{session=\"studio2@10.231.0.2\"} 35\n"))
        #expect(text.contains("recd_rtp_silences_total{session=\"studio2@10.231.0.2\"} 1\n"))
        #expect(text.contains("recd_rtp_datagrams_ignored_total{session=\"studio2@10.231.0.2\"} 12\n"))
    }

    @Test("replication lines only when replication is on; the last success only once one happened")
    func replication() {
        let status = Self.status(recorders: [])
        let never = PrometheusMetrics.render(
            MetricsSnapshot(
                status: status, inputPeaks: [], replication: .init(backlogSegments: 7, lastSuccessUnixSeconds: nil)))
        #expect(never.contains("recd_replication_backlog_segments 7\n"))
        #expect(!never.contains("recd_replication_last_success_timestamp_seconds"))
        let done = PrometheusMetrics.render(
            MetricsSnapshot(
                status: status, inputPeaks: [],
                replication: .init(backlogSegments: 0, lastSuccessUnixSeconds: 1_764_601_200)))
        #expect(done.contains("recd_replication_last_success_timestamp_seconds 1764601200\n"))
    }
}
