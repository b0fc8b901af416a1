// The daemon's shape (docs/architecture.md, "Daemon: front end, coordinator, services"): the
// policy store changed only by the coordinator; every policy effect handed out by
// one path; no client matches an event by its name.
import Foundation
import TestSupport
import Testing

enum DaemonSources {
    static let directory = ModuleMap.root + "/Sources/Daemon"

    /// Every Swift file of the Daemon module, by name, with its text.
    static func files() throws -> [(name: String, text: String)] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".swift") }.sorted()
            .map { ($0, try String(contentsOfFile: directory + "/" + $0, encoding: .utf8)) }
    }

    /// The `mutating` members of `SessionStore` (the Swift source of SessionStore.swift and its
    /// extensions' SessionStore+*.swift, declarations at any access).
    static func mutatingStoreMembers() throws -> Set<String> {
        let directory = ModuleMap.root + "/Sources/SessionPolicy/"
        let text = try FileManager.default.contentsOfDirectory(atPath: directory)
            .filter { $0 == "SessionStore.swift" || $0.hasPrefix("SessionStore+") }.sorted()
            .map { try String(contentsOfFile: directory + $0, encoding: .utf8) }.joined(separator: "\n")
        let regex = try NSRegularExpression(pattern: #"mutating\s+func\s+([A-Za-z_][A-Za-z0-9_]*)"#)
        return Set(
            regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map {
                String(text[Range($0.range(at: 1), in: text)!])
            })
    }

    /// The files among `files` that call `store.NAME(` for one of `names` (or assign `store`).
    static func filesChangingStore(_ files: [(name: String, text: String)], names: Set<String>) throws -> [String] {
        let alternatives = names.sorted().joined(separator: "|")
        let regex = try NSRegularExpression(pattern: #"\bstore\.(?:"# + alternatives + #")\(|\bstore\s*=[^=]"#)
        return files.filter { file in
            regex.firstMatch(in: file.text, range: NSRange(file.text.startIndex..., in: file.text)) != nil
        }.map(\.name)
    }

    /// How many lines of `text` call `name(` (not its declaration).
    static func calls(of name: String, in text: String) -> Int {
        text.split(separator: "\n").filter { $0.contains(name + "(") && !$0.contains("func " + name) }.count
    }
}

@Suite("the daemon's shape: front end, coordinator, services")
struct DaemonShapeTests {
    @Test("the store changes only in the coordinator's files (the composition root builds the first one)")
    func oneOwnerOfTheStore() throws {
        let names = try DaemonSources.mutatingStoreMembers()
        #expect(names.isSuperset(of: ["report", "activate", "deactivate", "configure"]), "found \(names.sorted())")
        let changing = try DaemonSources.filesChangingStore(try DaemonSources.files(), names: names)
        let owners = changing.filter { !$0.hasPrefix("SessionCoordinator") && $0 != "Startup.swift" }
        #expect(owners.isEmpty, "the store is changed outside the coordinator in \(owners)")
        #expect(changing.contains("SessionCoordinator+Commands.swift"), "the scan found no change at all")
    }

    @Test("the scan has teeth: a service that patches the store is seen")
    func storeScanBites() throws {
        let names = try DaemonSources.mutatingStoreMembers()
        let patched = [("PlayerService.swift", "store.report(.streams(running: [], audible: []))")]
        #expect(try DaemonSources.filesChangingStore(patched, names: names) == ["PlayerService.swift"])
        let reading = [("PlayerService.swift", "let state = store.session(app)")]
        #expect(try DaemonSources.filesChangingStore(reading, names: names).isEmpty)
    }

    @Test("every policy effect goes out by one path: one dispatch, one event per effect, facts in through report")
    func onePath() throws {
        let files = try DaemonSources.files()
        let all = files.map(\.text).joined(separator: "\n")
        #expect(DaemonSources.calls(of: "dispatch", in: all) == 1, "dispatch( is called from more than one place")
        #expect(
            DaemonSources.calls(of: "WireFormat.event", in: all) == 1, "effects become events in more than one place")
        // Facts are reported, never set: the store's fact input is called by the coordinator only.
        #expect(files.filter { $0.text.contains("store.report(") }.map(\.name) == ["SessionCoordinator.swift"])
        let reporting = files.filter { $0.text.contains("sink.report(.streams)") }.map(\.name)
        #expect(Set(reporting) == ["PlayerService.swift", "RecorderService.swift", "AttachmentService.swift"])
    }

    /// libaudiosession is C (libaudiosession/): it reads events by name, and CLibraryParityTests
    /// hold it to the Swift library's notifications.
    @Test("no Swift client matches an event by its name: AudioSession and recctl decode the typed Event")
    func typedEvents() throws {
        for module in ["AudioSession", "RecctlKit"] {
            let directory = ModuleMap.root + "/Sources/" + module
            for file in try FileManager.default.contentsOfDirectory(atPath: directory) where file.hasSuffix(".swift") {
                let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
                #expect(
                    !text.contains(#"["event"]?.stringValue =="#) && !text.contains(#"["event"] == "#),
                    "\(module)/\(file) matches an event by its name")
            }
        }
    }
}
