import Testing

@testable import SessionPolicy

@Suite("SPEC §8: missingEntitlement applies to activation for input")
struct ActivationForOutputTests {
    @Test("an input-capable session without mic usage may activate to play, not to record", arguments: [Category.record, .playAndRecord, .multiRoute])
    func outputOnlyActivation(category: Category) throws {
        var store = SessionStore()
        _ = try store.configure(app: "a", ownerUID: 0, configuration: try SessionConfiguration.validated(category: category))
        #expect(throws: SessionError.self) { _ = try store.activate(app: "a") }
        #expect(store.sessions["a"]?.state == .inactive)
        _ = try store.activate(app: "a", forInput: false)
        #expect(store.sessions["a"]?.state == .active)
        // Recording still needs the description.
        _ = store.setPermission(app: "a", .granted)
        do {
            try store.checkCanRecord(app: "a")
            Issue.record("recording without a usage description must fail")
        } catch {
            #expect(error.code == .missingEntitlement)
        }
    }
}
