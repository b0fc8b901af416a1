// The C contact of ArchiveProof: one Swift function per libsodium call, nothing else.
//
// Rules for this folder (as Platform's Internals):
// - libsodium's calls return 0 or -1 and set no errno; a -1 is returned as `false`.
// - `sodium_init` runs once, before any other call (`Sodium.ready`); it is thread-safe and
//   idempotent, and after it every function here may be called from any thread.
// - No C type leaves this module; the pointers here are the caller's buffers for the call only.

internal import CSodium

enum Sodium {
    /// True once libsodium is initialised (it picks its implementations and seeds its random
    /// generator); false only when the library cannot run at all.
    static let ready: Bool = sodium_init() >= 0

    // The sizes from libsodium's functions (its macros name other macros, which Swift does not import).
    static let sha256Bytes = Int(crypto_hash_sha256_bytes())
    static let publicKeyBytes = Int(crypto_sign_publickeybytes())
    static let secretKeyBytes = Int(crypto_sign_secretkeybytes())
    static let signatureBytes = Int(crypto_sign_bytes())

    /// A SHA-256 computation in progress (`crypto_hash_sha256_state`, 104 bytes, owned here).
    final class SHA256State {
        private var state = crypto_hash_sha256_state()

        init() { _ = crypto_hash_sha256_init(&state) }

        /// `crypto_hash_sha256_update`.
        func update(_ bytes: UnsafeRawBufferPointer) {
            guard let base = bytes.baseAddress, bytes.count > 0 else { return }
            _ = crypto_hash_sha256_update(&state, base.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
        }

        /// `crypto_hash_sha256_final`: the 32 bytes of the digest.
        func final() -> [UInt8] {
            var digest = [UInt8](repeating: 0, count: Sodium.sha256Bytes)
            _ = crypto_hash_sha256_final(&state, &digest)
            return digest
        }
    }

    /// `crypto_sign_keypair`: a new Ed25519 pair from libsodium's random generator.
    static func signKeypair() -> (publicKey: [UInt8], secretKey: [UInt8])? {
        var publicKey = [UInt8](repeating: 0, count: publicKeyBytes)
        var secretKey = [UInt8](repeating: 0, count: secretKeyBytes)
        guard crypto_sign_keypair(&publicKey, &secretKey) == 0 else { return nil }
        return (publicKey, secretKey)
    }

    /// `crypto_sign_detached`: the 64-byte signature of `message`.
    static func signDetached(_ message: [UInt8], secretKey: [UInt8]) -> [UInt8] {
        precondition(secretKey.count == secretKeyBytes, "an Ed25519 secret key is 64 bytes")
        var signature = [UInt8](repeating: 0, count: signatureBytes)
        var length: UInt64 = 0
        _ = crypto_sign_detached(&signature, &length, message, UInt64(message.count), secretKey)
        return signature
    }

    /// `crypto_sign_verify_detached`: true when `signature` is `publicKey`'s over `message`.
    static func verifyDetached(_ signature: [UInt8], message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == signatureBytes, publicKey.count == publicKeyBytes else { return false }
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey) == 0
    }

    /// `crypto_sign_ed25519_sk_to_pk`: the public half a secret key holds.
    static func publicKey(ofSecretKey secretKey: [UInt8]) -> [UInt8]? {
        guard secretKey.count == secretKeyBytes else { return nil }
        var publicKey = [UInt8](repeating: 0, count: publicKeyBytes)
        guard crypto_sign_ed25519_sk_to_pk(&publicKey, secretKey) == 0 else { return nil }
        return publicKey
    }

    // MARK: - Passwords and random identifiers (the HTTP accounts: Secrets.swift)

    static let passwordHashBytes = Int(crypto_pwhash_strbytes())

    /// `crypto_pwhash_str` with Argon2id at libsodium's interactive limits (2 passes, 64 MiB).
    static func passwordHash(_ password: [UInt8]) -> String? {
        var out = [CChar](repeating: 0, count: passwordHashBytes)
        // One byte more, so that an empty password still has an address.
        let padded = password.map { CChar(bitPattern: $0) } + [0]
        let done = padded.withUnsafeBufferPointer {
            crypto_pwhash_str(
                &out, $0.baseAddress!, UInt64(password.count), UInt64(crypto_pwhash_argon2id_opslimit_interactive()),
                crypto_pwhash_argon2id_memlimit_interactive())
        }
        guard done == 0 else { return nil }
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `crypto_pwhash_str_verify`: true when `password` is the one `hash` was made from.
    static func passwordMatches(_ hash: String, _ password: [UInt8]) -> Bool {
        var text = Array(hash.utf8CString)
        guard text.count <= passwordHashBytes else { return false }
        let padded = password.map { CChar(bitPattern: $0) } + [0]
        return padded.withUnsafeBufferPointer {
            crypto_pwhash_str_verify(&text, $0.baseAddress!, UInt64(password.count)) == 0
        }
    }

    /// `randombytes_buf`: `count` bytes from libsodium's generator (getrandom).
    static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        randombytes_buf(&bytes, count)
        return bytes
    }
}
