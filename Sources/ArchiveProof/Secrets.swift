// Secrets the HTTP accounts need from libsodium, which only this module may call
// (docs/architecture.md): Argon2id password hashes and random session identifiers. They are
// here, not in a module of their own, because a second importer of libsodium would be a
// second owner of its initialisation and of the choice of its algorithms.

/// A password's Argon2id hash in libsodium's string form (`$argon2id$v=19$m=65536,t=2,p=1$…`),
/// which carries its own salt and limits.
public enum PasswordHash {
    /// The longest password hashed or checked: longer ones are refused before any work.
    public static let maxPasswordBytes = 1024

    /// A new hash of `password` (a fresh random salt each time); nil when too long or when
    /// the system refused the 64 MiB Argon2id needs.
    public static func make(_ password: String) -> String? {
        let bytes = Array(password.utf8)
        guard Sodium.ready, bytes.count <= maxPasswordBytes else { return nil }
        return Sodium.passwordHash(bytes)
    }

    /// Whether `password` is the one `hash` was made from. Work bounded by the hash's own limits,
    /// which `looksValid` checked when the accounts file was read.
    public static func matches(_ hash: String, password: String) -> Bool {
        let bytes = Array(password.utf8)
        guard Sodium.ready, bytes.count <= maxPasswordBytes, looksValid(hash) else { return false }
        return Sodium.passwordMatches(hash, bytes)
    }

    /// Whether `hash` is an Argon2id string whose memory and passes are within what recd itself
    /// makes (an edited file must not make every login cost gigabytes): `m` at most 256 MiB,
    /// `t` at most 8, `p` 1.
    public static func looksValid(_ hash: String) -> Bool {
        let parts = hash.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0].isEmpty, parts[1] == "argon2id", parts[2] == "v=19" else { return false }
        var memory = 0, passes = 0, lanes = 0
        for field in parts[3].split(separator: ",") {
            let pair = field.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[1].count <= 9, let value = Int(pair[1]) else { return false }
            switch pair[0] {
            case "m": memory = value
            case "t": passes = value
            case "p": lanes = value
            default: return false
            }
        }
        return (1...262_144).contains(memory) && (1...8).contains(passes) && lanes == 1
            && hash.utf8.count < Sodium.passwordHashBytes
    }
}

/// Unguessable identifiers (session ids, CSRF tokens) from libsodium's generator.
public enum SecureRandom {
    /// `bytes` random bytes as lower-case hex.
    public static func hex(bytes: Int = 32) -> String {
        precondition(Sodium.ready, "libsodium cannot run")
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in Sodium.randomBytes(bytes) {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
