// `[replicate]`: the keys, their defaults, the backoff, and the values refused.

import Testing

@testable import SystemSupport

private func parse(_ text: String) throws(ConfigError) -> RecdConfig {
    try ConfigLoader.parse(text: text, source: "test.conf", environment: ["HOME": "/home/ann"], isRoot: false)
}

@Suite("[replicate] config")
struct ReplicateConfigTests {
    @Test("no section: replication off; every key read")
    func keys() throws {
        #expect(try parse("[daemon]\n").replicate == ReplicateSection())
        let config = try parse(
            """
            [replicate]
            remote = offsite:recd/studio-a
            rclone_config = /etc/recd/rclone.conf
            rclone = /opt/rclone/rclone
            retry_min_seconds = 2
            retry_max_seconds = 60
            timeout_seconds = 120
            bandwidth_limit = 08:00,512k 19:00,off

            """)
        #expect(
            config.replicate
                == ReplicateSection(
                    remote: "offsite:recd/studio-a", rcloneConfig: "/etc/recd/rclone.conf",
                    rclone: "/opt/rclone/rclone",
                    retryMinSeconds: 2, retryMaxSeconds: 60, timeoutSeconds: 120, bandwidthLimit: "08:00,512k 19:00,off"
                ))
        #expect(try parse("[replicate]\nremote = /mnt/backup/recd\n").replicate.remote == "/mnt/backup/recd")
        #expect(try parse("[replicate]\nremote = s3:\n").replicate.remote == "s3:")
    }

    @Test("the backoff doubles from retry_min_seconds and stops at retry_max_seconds")
    func backoff() {
        let section = ReplicateSection(remote: "r:", retryMinSeconds: 5, retryMaxSeconds: 60)
        #expect((1...7).map { section.backoff(afterFailures: $0) } == [5, 10, 20, 40, 60, 60, 60])
        #expect(section.backoff(afterFailures: 10_000) == 60)
    }

    @Test(
        "bad values are refused with the line and what to write",
        arguments: [
            ("remote = justaname", "is not an rclone remote"),
            ("remote = relative/path", "is not an rclone remote"),
            ("remote = -x:y", "is not an rclone remote"),
            ("rclone_config = rclone.conf", "rclone_config"),
            ("retry_min_seconds = 0", "retry_min_seconds"),
            ("retry_min_seconds = 10\nretry_max_seconds = 5", "is below retry_min_seconds"),
            ("bandwidth_limit = 1M; rm -rf /", "is not an rclone --bwlimit value"),
            ("speed = 1", "speed"),
        ])
    func refused(line: String, message: String) {
        do {
            _ = try parse("[replicate]\n\(line)\n")
            Issue.record("accepted \(line)")
        } catch {
            #expect(error.line >= 2, "\(error)")
            #expect(error.message.contains(message), "\(error)")
        }
    }
}
