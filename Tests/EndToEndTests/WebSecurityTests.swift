// recd safe from the network (docs/http.md, docs/security.md "HTTP"): the real recd listens on a
// veth address between two network namespaces; curl and openssl in the other namespace are the
// station's network. TLS with the self-signed certificate recd makes (its fingerprint as recctl
// prints it equals openssl's), accounts made with `recctl web user add`, logins and their
// cookies, roles (a viewer hears nothing, a listener only its granted feed), the CSRF rule,
// per-account and per-address throttling, and the audit lines. The same in Chromium:
// Tests/Browser/login.py.
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("recd safe from the network: TLS, accounts, roles, CSRF, throttling", .serialized)
struct WebSecurityTests {
    static let port: UInt16 = 9721

    /// curl's answer with its response headers.
    struct Answer {
        var status: Int
        var headers: String
        var body: [UInt8]
        var text: String { text(limit: 600) }
        func text(limit: Int) -> String { String(decoding: body.prefix(limit), as: UTF8.self) }
    }

    /// One curl in `prefix` (e.g. `ip netns exec NS`), trusting only `certificate`.
    static func curl(
        _ url: String, prefix: [String] = [], certificate: String, jar: String? = nil, form: String? = nil,
        headers: [String] = [], into directory: String
    ) throws -> Answer {
        let output = directory + "/body-\(UUID().uuidString.prefix(8))"
        let dump = output + ".headers"
        var arguments = [
            "-s", "-g", "--cacert", certificate, "-o", output, "-D", dump, "-w", "%{http_code}", "-m", "20",
        ]
        if let jar { arguments += ["-b", jar, "-c", jar] }
        if let form { arguments += ["--data-raw", form] }
        for header in headers { arguments += ["-H", header] }
        arguments.append(url)
        let result =
            try prefix.first.map {
                try ExternalTools.run(
                    $0, Array(prefix.dropFirst()) + [try ExternalTools.path("curl")] + arguments, timeout: 30)
            } ?? ExternalTools.run("curl", arguments, timeout: 30)
        defer {
            try? FileManager.default.removeItem(atPath: output)
            try? FileManager.default.removeItem(atPath: dump)
        }
        return Answer(
            status: Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1,
            headers: (try? String(contentsOfFile: dump, encoding: .utf8)) ?? "",
            body: FileManager.default.contents(atPath: output).map { [UInt8]($0) } ?? [])
    }

    /// `recctl web user add NAME --role ROLE …` with the password on standard input.
    static func addUser(_ daemon: Daemon, _ name: String, password: String, _ flags: [String]) throws {
        let command =
            "printf '%s\\n' '\(password)' | '\(daemon.recctlPath)' --socket '\(daemon.socket)' web user add \(name) "
            + flags.joined(separator: " ")
        let result = try ExternalTools.run("bash", ["-c", command])
        try #require(result.status == 0, "web user add \(name): \(result.stdout) \(result.stderr)")
    }

    @Test(
        "over a veth pair: TLS 1.2+ with recd's self-signed certificate (fingerprint as openssl's), cookies HttpOnly Secure SameSite=Strict, viewer 403 for audio, a listener only its feed, CSRF refused, 10 wrong passwords throttled per account and per address, audit lines"
    )
    func accountsOverVeth() throws {
        try #require(getuid() == 0, "network namespaces need root")
        let pair = try NamespacePair("websrv", "webcli")
        defer { pair.remove() }
        let (daemon, source, segment) = try HTTPCallerRightsTests.recordingDaemon(
            extraConfig: """

                [http]
                listen = \(pair.addresses[0]):\(Self.port)
                session_minutes = 5

                [web-group producers]
                feeds = nothing/here

                """, networkNamespace: pair.name(.first))
        defer { source.stop() }
        let out = try HTTPCallerRightsTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let state = daemon.directory + "/state"
        let certificate = state + "/http-certificate.pem"
        let client = ["ip", "netns", "exec", pair.name(.second)]
        let server = ["ip", "netns", "exec", pair.name(.first)]
        let base = "https://\(pair.addresses[0]):\(Self.port)"

        // The certificate made at first start: its key 0600, its fingerprint as openssl prints it.
        var keyStatus = stat()
        try #require(stat(state + "/http-key.pem", &keyStatus) == 0, "no key; recd's log:\n\(daemon.log)")
        #expect(keyStatus.st_mode & 0o777 == 0o600, "key mode \(String(keyStatus.st_mode & 0o777, radix: 8))")
        let printed = try daemon.recctl("web", "certificate")
        let openssl = try ExternalTools.run(
            "openssl", ["x509", "-in", certificate, "-noout", "-fingerprint", "-sha256"])
        let theirs = openssl.stdout.split(separator: "=").last.map {
            $0.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(
            theirs != nil && printed.stdout.contains("SHA-256 fingerprint: \(theirs ?? "-")"),
            "recctl: \(printed.stdout) \(printed.stderr); openssl: \(openssl.stdout)")
        #expect(daemon.log.contains(theirs ?? "-"), "the fingerprint is not in recd's log")

        // openssl s_client from the other namespace: verified against the certificate, TLS 1.3;
        // TLS 1.1 refused.
        let handshake = try ExternalTools.run(
            client[0],
            Array(client.dropFirst()) + [
                try ExternalTools.path("openssl"), "s_client", "-connect", "\(pair.addresses[0]):\(Self.port)",
                "-CAfile", certificate, "-verify_return_error", "-brief",
            ], timeout: 20)
        let shown = handshake.stdout + handshake.stderr
        #expect(
            shown.contains("Verification: OK") && shown.contains("Protocol version: TLSv1.3"),
            "s_client: \(shown)")
        let old = try ExternalTools.run(
            client[0],
            Array(client.dropFirst()) + [
                try ExternalTools.path("openssl"), "s_client", "-connect", "\(pair.addresses[0]):\(Self.port)",
                "-CAfile", certificate, "-tls1_1", "-brief",
            ], timeout: 20)
        #expect(old.status != 0 && !(old.stdout + old.stderr).contains("Protocol version: TLSv1.1"), "TLS 1.1 taken")
        // Plain HTTP to the TLS port gets nothing.
        let plain = try HTTPCallerRightsTests.curl(
            "http://\(pair.addresses[0]):\(Self.port)/metrics", prefix: client, into: out)
        #expect(plain.status != 200, "plain HTTP answered \(plain.status)")

        // Accounts, made with recctl as root (the state directory's owner): the file 0600.
        let list = try daemon.recctl("--json", "archive", "list").json?.arrayValue ?? []
        let row = try #require(list.first { $0["path"]?.stringValue == segment })
        let feed = "\(row["app"]?.stringValue ?? "")/\(row["stream"]?.stringValue ?? "")"
        try Self.addUser(daemon, "viewer1", password: "viewer-pass-1", ["--role", "viewer"])
        try Self.addUser(daemon, "hearer", password: "hearer-pass-1", ["--role", "listener", "--feeds", feed])
        try Self.addUser(daemon, "other", password: "other-pass-1", ["--role", "listener", "--group", "producers"])
        var usersStatus = stat()
        #expect(stat(state + "/http-users", &usersStatus) == 0 && usersStatus.st_mode & 0o777 == 0o600)
        let users = (try? String(contentsOfFile: state + "/http-users", encoding: .utf8)) ?? ""
        #expect(users.contains("$argon2id$") && !users.contains("viewer-pass-1"), "\(users)")

        let relative = String(segment.dropFirst(daemon.directory.count + "/archive/".count))
        let bytes = try #require(FileManager.default.contents(atPath: segment).map { [UInt8]($0) })
        chmod(segment, 0o600)  // the file's mode is not what decides for an account

        // Without a session: 401 (a browser is sent to /login).
        let none = try Self.curl(base + "/api/status", prefix: client, certificate: certificate, into: out)
        #expect(none.status == 401, "no session: \(none.status)")
        let page = try Self.curl(
            base + "/", prefix: client, certificate: certificate, headers: ["Accept: text/html"], into: out)
        #expect(page.status == 303 && page.headers.contains("Location: /login?next=/"), "\(page.headers)")

        func logIn(_ account: String, _ password: String, prefix: [String] = client) throws -> (Answer, String) {
            let jar = out + "/jar-\(account)-\(UUID().uuidString.prefix(6))"
            let answer = try Self.curl(
                base + "/login", prefix: prefix, certificate: certificate, jar: jar,
                form: "account=\(account)&password=\(password)&next=/", into: out)
            return (answer, jar)
        }

        // The viewer: logged in, cookies as they must be; states yes, audio no.
        let (viewerLogin, viewerJar) = try logIn("viewer1", "viewer-pass-1")
        #expect(viewerLogin.status == 303, "viewer login: \(viewerLogin.status) \(viewerLogin.text)")
        let cookieLines = viewerLogin.headers.split(separator: "\r\n").filter {
            $0.lowercased().hasPrefix("set-cookie:")
        }
        let session = cookieLines.first { $0.contains("recd_session=") }.map(String.init) ?? ""
        #expect(
            session.contains("HttpOnly") && session.contains("Secure") && session.contains("SameSite=Strict"),
            "session cookie: \(session)")
        let csrfCookie = cookieLines.first { $0.contains("recd_csrf=") }.map(String.init) ?? ""
        #expect(csrfCookie.contains("Secure") && csrfCookie.contains("SameSite=Strict"), "\(csrfCookie)")
        let status = try Self.curl(
            base + "/api/status", prefix: client, certificate: certificate, jar: viewerJar, into: out)
        #expect(status.status == 200, "viewer /api/status: \(status.status)")
        let viewerAudio = try Self.curl(
            base + "/archive/\(relative)", prefix: client, certificate: certificate, jar: viewerJar, into: out)
        #expect(viewerAudio.status == 403 && viewerAudio.text.contains("viewer"), "viewer audio: \(viewerAudio.status)")

        // A listener hears its own feed, exactly; one granted another feed (by its group) does not.
        let (_, hearerJar) = try logIn("hearer", "hearer-pass-1")
        let heard = try Self.curl(
            base + "/archive/\(relative)", prefix: client, certificate: certificate, jar: hearerJar, into: out)
        #expect(heard.status == 200 && heard.body == bytes, "granted listener: \(heard.status)")
        let (_, otherJar) = try logIn("other", "other-pass-1")
        let refused = try Self.curl(
            base + "/archive/\(relative)", prefix: client, certificate: certificate, jar: otherJar, into: out)
        #expect(refused.status == 403, "listener of another feed: \(refused.status)")
        // The day's printed proof (/api/report) to the same callers: the listener of the feed gets
        // the page, proved for its account; the viewer and the listener of another feed get 403.
        let report =
            base + "/api/report?feed=\(feed)&date=\(relative.prefix(10).replacingOccurrences(of: "/", with: "-"))"
        let proof = try Self.curl(report, prefix: client, certificate: certificate, jar: hearerJar, into: out)
        #expect(
            proof.status == 200 && proof.text(limit: 1 << 20).contains("for account hearer (listener)"),
            "granted listener's report: \(proof.status) \(proof.text(limit: 400))")
        let viewerProof = try Self.curl(report, prefix: client, certificate: certificate, jar: viewerJar, into: out)
        #expect(viewerProof.status == 403 && viewerProof.text(limit: 400).contains("viewer"), "\(viewerProof.status)")
        let otherProof = try Self.curl(report, prefix: client, certificate: certificate, jar: otherJar, into: out)
        #expect(otherProof.status == 403, "listener of another feed's report: \(otherProof.status)")

        // CSRF: a POST with the session but without its token is refused; from another origin too.
        let csrf = try #require(
            csrfCookie.split(separator: ";").first?.split(separator: "=").last.map(String.init), "\(csrfCookie)")
        let noToken = try Self.curl(
            base + "/logout", prefix: client, certificate: certificate, jar: viewerJar, form: "x=1", into: out)
        #expect(noToken.status == 403 && noToken.text.contains("CSRF"), "no token: \(noToken.status) \(noToken.text)")
        let foreign = try Self.curl(
            base + "/logout", prefix: client, certificate: certificate, jar: viewerJar, form: "csrf=\(csrf)",
            headers: ["Origin: https://evil.example"], into: out)
        #expect(foreign.status == 403, "foreign origin: \(foreign.status)")
        let stillIn = try Self.curl(
            base + "/api/status", prefix: client, certificate: certificate, jar: viewerJar, into: out)
        #expect(stillIn.status == 200, "the refused logouts logged out: \(stillIn.status)")
        let loggedOut = try Self.curl(
            base + "/logout", prefix: client, certificate: certificate, jar: viewerJar, form: "csrf=\(csrf)",
            headers: ["Origin: \(base)"], into: out)
        #expect(loggedOut.status == 303, "logout with the token: \(loggedOut.status) \(loggedOut.text)")
        let after = try Self.curl(
            base + "/api/status", prefix: client, certificate: certificate, jar: viewerJar, into: out)
        #expect(after.status == 401, "after logout: \(after.status)")

        // The browser: Chromium in the client's namespace logs in, reaches /, logs out (before the
        // throttle below shuts the client's address out).
        try Self.addUser(daemon, "browser", password: "browser-pass-1", ["--role", "viewer"])
        let browser = try ExternalTools.run(
            client[0],
            Array(client.dropFirst()) + [
                try ExternalTools.path("python3"), ExternalTools.packageRoot + "/Tests/Browser/login.py", "--url",
                base + "/", "--account", "browser", "--password", "browser-pass-1",
            ], environment: ["RECD_SELENIUM_VENV": StatusPageTests.seleniumVenv], timeout: 120)
        print(browser.stdout)
        #expect(browser.status == 0, "login.py: \(browser.stdout)\n\(browser.stderr)\nrecd's log:\n\(daemon.log)")

        // 10 wrong passwords for `hearer` from the server's own veth address (the browser's one
        // wrong try counts against the client's): the 11th try, right password or not, is
        // throttled; from the client's address too: per account. That address is throttled for
        // every account: per address.
        for attempt in 1...10 {
            let (wrong, _) = try logIn("hearer", "wrong-\(attempt)", prefix: server)
            #expect(wrong.status == 401, "wrong password \(attempt): \(wrong.status)")
        }
        let (blocked, _) = try logIn("hearer", "hearer-pass-1", prefix: server)
        #expect(
            blocked.status == 429 && blocked.headers.contains("Retry-After:"),
            "after 10 wrong: \(blocked.status) \(blocked.headers)")
        let (elsewhere, _) = try logIn("hearer", "hearer-pass-1")
        #expect(elsewhere.status == 429, "the account from another address: \(elsewhere.status)")
        let (otherAccount, _) = try logIn("viewer1", "viewer-pass-1", prefix: server)
        #expect(otherAccount.status == 429, "another account from the throttled address: \(otherAccount.status)")
        let (fine, _) = try logIn("viewer1", "viewer-pass-1")
        #expect(fine.status == 303, "another account from another address: \(fine.status)")

        // The audit: every login, failure, throttle, logout and listen.
        let log = daemon.log
        for line in [
            "http audit: login: account \"viewer1\" from \(pair.addresses[1])",
            "http audit: login failed: account \"hearer\" from \(pair.addresses[0])",
            "http audit: login throttled: account \"hearer\"", "http audit: logout: account viewer1",
            "http audit: listen \(feed) (", "http audit: listen \(feed) refused to account viewer1",
        ] {
            #expect(log.contains(line), "no audit line \(line)")
        }

    }
}
