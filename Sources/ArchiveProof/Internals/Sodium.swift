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
}
