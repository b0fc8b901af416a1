// The listener's certificate and its accounts, from `[http]`: TLS whenever the address is not
// loopback (or a certificate is configured), with the files `tls_certificate` and `tls_key`
// name, or else a self-signed pair recd makes in its state directory at first start and keeps
// (http-certificate.pem, 0644, and http-key.pem, 0600). The certificate's SHA-256 fingerprint
// goes into recd's log, for a browser's user to compare with what `recctl web certificate`
// prints on the box.
import ArchiveProof
import Glibc
import HTTPServer
import PKI
import Platform
import SystemSupport

extension HTTPEndpoints {
    static let certificateFileName = "http-certificate.pem"
    static let keyFileName = "http-key.pem"
    static let usersFileName = "http-users"

    /// The accounts file: `[http] users_file`, else STATE_DIR/http-users.
    static func usersFile(_ config: RecdConfig) -> String {
        config.http.usersFile ?? config.daemon.stateDir + "/" + usersFileName
    }

    /// The listener's certificate: `[http] tls_certificate`, else the self-signed one's place,
    /// STATE_DIR/http-certificate.pem (made at start when the listener is not on loopback).
    static func certificateFile(_ config: RecdConfig) -> String {
        config.http.tlsCertificate ?? config.daemon.stateDir + "/" + certificateFileName
    }

    /// The certificate and key for `address` (nil: plain HTTP, on loopback without configured files).
    static func tls(config: RecdConfig, address: HTTPListenAddress) throws(HTTPServerError) -> HTTPTLS? {
        let http = config.http
        if let certificatePath = http.tlsCertificate, let keyPath = http.tlsKey {
            do throws(PKIError) {
                let certificate = try Certificate.readFile(certificatePath)
                let key = try Certificate.readFile(keyPath)
                guard let fingerprint = Certificate.fingerprint(pem: certificate) else {
                    throw PKIError("\(certificatePath) holds no PEM certificate")
                }
                guard Certificate.holdsPrivateKey(key) else { throw PKIError("\(keyPath) holds no PEM private key") }
                Log.notice("http: TLS certificate \(certificatePath), SHA-256 fingerprint \(fingerprint)")
                return HTTPTLS(
                    certificate: String(decoding: certificate, as: UTF8.self), key: String(decoding: key, as: UTF8.self)
                )
            } catch {
                throw HTTPServerError("[http] tls_certificate/tls_key: \(error.message)")
            }
        }
        guard !address.isLoopback else { return nil }
        return try selfSigned(stateDir: config.daemon.stateDir, address: address)
    }

    /// The self-signed pair in `stateDir`, made when it is not there.
    static func selfSigned(stateDir: String, address: HTTPListenAddress) throws(HTTPServerError) -> HTTPTLS {
        let certificatePath = stateDir + "/" + certificateFileName
        let keyPath = stateDir + "/" + keyFileName
        do throws(PKIError) {
            if FileSystem.linkStatus(of: certificatePath) != nil || FileSystem.linkStatus(of: keyPath) != nil {
                let certificate = try Certificate.readFile(certificatePath)
                let key = try Certificate.readFile(keyPath)
                guard let fingerprint = Certificate.fingerprint(pem: certificate), Certificate.holdsPrivateKey(key)
                else {
                    throw PKIError(
                        "\(certificatePath) or \(keyPath) is not a PEM certificate and key; remove both and recd "
                            + "makes a new pair")
                }
                Log.notice("http: self-signed TLS certificate \(certificatePath), SHA-256 fingerprint \(fingerprint)")
                return HTTPTLS(
                    certificate: String(decoding: certificate, as: UTF8.self), key: String(decoding: key, as: UTF8.self)
                )
            }
            let made = try Certificate.makeSelfSigned(names: names(for: address))
            do throws(SystemError) {
                // The key first: a certificate without its key would be kept and fail at every start.
                try AtomicFile.write(made.key, to: keyPath, mode: 0o600)
                try AtomicFile.write(made.certificate, to: certificatePath, mode: 0o644)
            } catch {
                throw PKIError("cannot write \(keyPath) and \(certificatePath): \(error.message)")
            }
            let fingerprint = Certificate.fingerprint(pem: Array(made.certificate.utf8)) ?? "?"
            Log.notice(
                "http: made a self-signed TLS certificate \(certificatePath) for \(names(for: address).joined(separator: ", ")), "
                    + "SHA-256 fingerprint \(fingerprint) (recctl web certificate prints it)")
            return HTTPTLS(certificate: made.certificate, key: made.key)
        } catch {
            throw HTTPServerError(
                "no TLS certificate: \(error.message); or set [http] tls_certificate and tls_key",
                isConfiguration: false)
        }
    }

    /// What the certificate names: the listen address (for a wildcard, every address of the
    /// machine's interfaces), the host's name, and loopback.
    static func names(for address: HTTPListenAddress) -> [String] {
        var names: [String] = []
        let wildcard = address.host == "0.0.0.0" || address.host == "::" || address.host.isEmpty
        if wildcard {
            var list: UnsafeMutablePointer<ifaddrs>?
            if getifaddrs(&list) == 0 {
                var cursor = list
                while let entry = cursor {
                    if let socketAddress = entry.pointee.ifa_addr {
                        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
                        let family = Int32(socketAddress.pointee.sa_family)
                        if family == AF_INET {
                            socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                                var raw = $0.pointee.sin_addr
                                _ = inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
                            }
                        } else if family == AF_INET6 {
                            socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                                var raw = $0.pointee.sin6_addr
                                _ = inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
                            }
                        }
                        let name = String(cString: text)
                        if !name.isEmpty && !name.hasPrefix("fe80") && !names.contains(name) { names.append(name) }
                    }
                    cursor = entry.pointee.ifa_next
                }
                freeifaddrs(list)
            }
        } else {
            names.append(address.host)
        }
        var host = [CChar](repeating: 0, count: 256)
        if gethostname(&host, host.count - 1) == 0 {
            let name = String(cString: host)
            if !name.isEmpty { names.append(name) }
        }
        for name in ["localhost", "127.0.0.1", "::1"] where !names.contains(name) { names.append(name) }
        return Array(names.prefix(32))
    }

    /// Browser logins, when the accounts file exists.
    static func login(config: RecdConfig, accounts: HTTPAccounts) -> HTTPLogin {
        HTTPLogin(
            verify: { accounts.verify($0, password: $1) },
            accountExists: { accounts.account(named: $0) != nil },
            newSecret: { SecureRandom.hex(bytes: 32) },
            loginPage: { LoginPageAssets.loginPage(message: $0, next: $1) },
            logoutPage: { LoginPageAssets.logoutPage(account: $0, csrf: $1) },
            audit: { Log.notice("http audit: \($0)") },
            sessionSeconds: Double(config.http.sessionMinutes) * 60)
    }
}
