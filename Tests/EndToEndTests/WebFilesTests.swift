// `recctl web` finds the files recd uses without --file: a users_file and a tls_certificate
// configured outside the state directory, named by recd's status.
import ControlProtocol
import Foundation
import TestSupport
import Testing

@Suite("recctl web finds recd's configured files")
struct WebFilesTests {
    @Test(
        "[http] users_file and tls_certificate elsewhere: status names them, recctl web user add/list and web certificate use them without --file"
    )
    func configuredFiles() throws {
        let directory = try makeTemporaryDirectory("recd-webfiles")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let users = directory + "/accounts/people"
        try FileManager.default.createDirectory(atPath: directory + "/accounts", withIntermediateDirectories: true)
        let certificate = directory + "/tls/box.pem"
        let key = directory + "/tls/box.key"
        try FileManager.default.createDirectory(atPath: directory + "/tls", withIntermediateDirectories: true)
        let made = try ExternalTools.run(
            "openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-subj", "/CN=webfiles.test", "-keyout", key, "-out", certificate,
            ])
        try #require(made.status == 0, "openssl req: \(made.stderr)")
        let daemon = try Daemon(
            extraConfig: """

                [http]
                listen = no
                users_file = \(users)
                tls_certificate = \(certificate)
                tls_key = \(key)

                """)

        let described = try daemon.recctl("--json", "status").json?["daemon"]
        #expect(described?["httpUsersFile"]?.stringValue == users, "\(described?.jsonText ?? "no status")")
        #expect(described?["httpCertificate"]?.stringValue == certificate)

        try WebSecurityTests.addUser(daemon, "anna", password: "correct horse battery", ["--role", "viewer"])
        let written = try String(contentsOfFile: users, encoding: .utf8)
        #expect(written.split(separator: "\n").contains { $0.hasPrefix("anna viewer - $argon2id$") }, "\(written)")
        #expect(!FileManager.default.fileExists(atPath: daemon.directory + "/state/http-users"))
        let listed = try daemon.recctl("web", "user", "list")
        #expect(listed.status == 0 && listed.stdout.contains("anna"), "\(listed.stdout) \(listed.stderr)")

        let printed = try daemon.recctl("web", "certificate")
        let openssl = try ExternalTools.run(
            "openssl", ["x509", "-in", certificate, "-noout", "-fingerprint", "-sha256"])
        let theirs = openssl.stdout.split(separator: "=").last.map {
            $0.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(
            theirs != nil && printed.stdout.contains(certificate)
                && printed.stdout.contains("SHA-256 fingerprint: \(theirs ?? "-")"),
            "recctl: \(printed.stdout) \(printed.stderr); openssl: \(openssl.stdout)")
    }
}
