// The project's licence is stated once and the same everywhere: LICENSE holds the Apache
// License 2.0, debian/copyright says Apache-2.0 for every file (no placeholder left), the
// README points at LICENSE.
import Foundation
import Testing
import TestSupport

@Suite("the licence: Apache-2.0 in LICENSE, debian/copyright and the README")
struct LicenseTests {
    static func read(_ path: String) throws -> String {
        try String(contentsOfFile: ExternalTools.packageRoot + "/" + path, encoding: .utf8)
    }

    @Test("LICENSE is the Apache License 2.0; debian/copyright says Apache-2.0 with no TODO; the README links LICENSE")
    func apache() throws {
        let license = try Self.read("LICENSE")
        #expect(license.contains("Apache License") && license.contains("Version 2.0, January 2004"))
        #expect(license.contains("END OF TERMS AND CONDITIONS"), "LICENSE is not the whole text")
        let copyright = try Self.read("debian/copyright")
        #expect(!copyright.contains("TODO"), "debian/copyright still has a placeholder")
        let fields = copyright.split(separator: "\n").filter { $0.hasPrefix("License:") }
        #expect(!fields.isEmpty && fields.allSatisfy { $0 == "License: Apache-2.0" }, "\(fields)")
        #expect(copyright.contains("/usr/share/common-licenses/Apache-2.0"))
        #expect(try Self.read("README.md").contains("[LICENSE](LICENSE)"))
    }
}
