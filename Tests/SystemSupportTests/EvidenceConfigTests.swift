// `[evidence]`: the time-stamping keys, their defaults, and the values refused.

import Testing

@testable import SystemSupport

private func parse(_ text: String) throws(ConfigError) -> RecdConfig {
    try ConfigLoader.parse(text: text, source: "test.conf", environment: ["HOME": "/home/ann"], isRoot: false)
}

@Suite("[evidence] config")
struct EvidenceConfigTests {
    @Test("no section: no time-stamps; every key read; TSAs kept in order")
    func keys() throws {
        #expect(try parse("[daemon]\n").evidence == EvidenceSection())
        let config = try parse(
            """
            [evidence]
            tsa_url = https://tsa.example.net/tsr, http://backup.example.org/ts
            tsa_ca_file = /etc/recd/tsa-roots.pem
            tsa_certificate = AB:cd:00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff:00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd
            tsa_interval_seconds = 2
            tsa_alarm_minutes = 30

            """)
        #expect(
            config.evidence
                == EvidenceSection(
                    tsaURLs: ["https://tsa.example.net/tsr", "http://backup.example.org/ts"],
                    tsaCAFile: "/etc/recd/tsa-roots.pem",
                    tsaCertificate:
                        "AB:cd:00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff:00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd",
                    tsaIntervalSeconds: 2, tsaAlarmMinutes: 30))
        #expect(try parse("[evidence]\ntsa_url = http://tsa.example/\n").evidence.tsaIntervalSeconds == 600)
        #expect(
            try parse("[evidence]\ntsa_url = http://tsa.example/\ntsa_certificate = /etc/recd/tsa.pem\n").evidence
                .tsaCertificate == "/etc/recd/tsa.pem")
    }

    @Test(
        "bad values are refused with the line and what to write",
        arguments: [
            ("tsa_url = ftp://tsa.example/", "is not a list of http:// or https:// URLs"),
            ("tsa_url = file:///etc/passwd", "is not a list of http:// or https:// URLs"),
            ("tsa_url = tsa.example.net", "is not a list of http:// or https:// URLs"),
            ("tsa_url = http://tsa.example/\ntsa_ca_file = roots.pem", "tsa_ca_file"),
            ("tsa_url = http://tsa.example/\ntsa_certificate = deadbeef", "SHA-256 fingerprint"),
            ("tsa_url = http://tsa.example/\ntsa_interval_seconds = 0", "tsa_interval_seconds"),
            ("tsa_url = http://tsa.example/\ntsa_alarm_minutes = 0", "tsa_alarm_minutes"),
            ("tsa_interval_seconds = 60", "has no effect without tsa_url"),
            ("tsa_urls = http://tsa.example/", "tsa_urls"),
        ])
    func refused(line: String, message: String) {
        do {
            _ = try parse("[evidence]\n\(line)\n")
            Issue.record("accepted: \(line)")
        } catch {
            #expect(error.line >= 2, "\(error)")
            #expect(error.message.contains(message), "\(error)")
        }
    }
}
