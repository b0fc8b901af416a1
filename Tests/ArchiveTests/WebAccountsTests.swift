// The web accounts file and the password hashes (Sources/ArchiveProof/WebAccounts.swift,
// Secrets.swift): what the parser takes and refuses, the round trip, Argon2id.
import ArchiveProof
import Foundation
import Testing

@Suite("web accounts file and password hashes")
struct WebAccountsTests {
    @Test("a hash matches its password only; its limits are recd's; a hash costing more is refused")
    func hashes() throws {
        let hash = try #require(PasswordHash.make("correct horse"))
        #expect(hash.hasPrefix("$argon2id$v=19$m=65536,t=2,p=1$"))
        #expect(PasswordHash.looksValid(hash))
        #expect(PasswordHash.matches(hash, password: "correct horse"))
        #expect(!PasswordHash.matches(hash, password: "correct horse "))
        #expect(!PasswordHash.matches(hash, password: ""))
        #expect(PasswordHash.make("correct horse") != hash, "a fresh salt each time")
        let costly = hash.replacingOccurrences(of: "m=65536", with: "m=4194304")
        #expect(!PasswordHash.looksValid(costly) && !PasswordHash.matches(costly, password: "correct horse"))
        #expect(!PasswordHash.looksValid("$argon2i$v=19$m=65536,t=2,p=1$a$b"))
        #expect(SecureRandom.hex().count == 64 && SecureRandom.hex() != SecureRandom.hex())
    }

    @Test("lines taken, lines refused with their numbers and reasons, the text read back the same")
    func parse() throws {
        let hash = try #require(PasswordHash.make("a password"))
        let text = """
            # comment
            anna admin - \(hash)
            morning listener feeds:logger/mic2,studio/main \(hash)
            desk listener group:producers \(hash)
            anna viewer - \(hash)
            bad/name viewer - \(hash)
            eve root - \(hash)
            joe listener feeds:nofeed \(hash)
            kim viewer - notahash
            too few fields

            """
        let file = WebAccountsFile.parse(Array(text.utf8))
        #expect(file.accounts.map(\.name) == ["anna", "morning", "desk"])
        #expect(file.accounts[1].grant == .feeds(["logger/mic2", "studio/main"]))
        #expect(file.accounts[2].grant == .group("producers"))
        #expect(file.problems.map(\.line) == [5, 6, 7, 8, 9, 10])
        #expect(WebAccountsFile.parse(Array(file.text.utf8)) == WebAccountsFile(accounts: file.accounts))
        #expect(WebAccountsFile.parse(Array(repeating: 0xff, count: 5000)).accounts.isEmpty)
    }
}
