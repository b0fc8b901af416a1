// The connection reconciler without JACK: rules and the actual graph in, the changes out; the
// conflict rule (forbidden beats wanted, an attachment beats a configured group); and the
// churn rule (an edge recd changed more than twice within a second is left alone), with the
// clock passed in.

import Testing

@testable import AudioEngine

@Suite("Connection reconciler")
struct ConnectionReconcilerTests {
    static func edge(_ source: String, _ destination: String) -> JackConnection {
        JackConnection(source: source, destination: destination)
    }

    static let keep = edge("recd:out_1", "system:playback_1")
    static let keepIn = edge("system:capture_1", "recd:mic_1")
    static let appToRecd = edge("app:out_1", "recd:app-1-play_1")
    static let bypass = edge("app:out_1", "system:playback_1")
    static let recdToApp = edge("recd:app-1-capture_1", "app:in_1")
    static let micBypass = edge("system:capture_1", "app:in_1")
    static let userExtra = edge("recd:out_1", "system:playback_2")

    /// Port keeping alone: recd's out_1 and mic_1 with their targets.
    static var keeping: ConnectionRules {
        var rules = ConnectionRules()
        rules.wanted = [keep: .group("out"), keepIn: .group("mic")]
        rules.watched = ["recd:out_1": .output, "recd:mic_1": .input]
        return rules
    }

    /// Port keeping plus an attachment of app (play out_1, capture in_1).
    static var attached: ConnectionRules {
        var rules = keeping
        rules.wanted[appToRecd] = .attachment("app")
        rules.wanted[recdToApp] = .attachment("app")
        rules.guardedPorts = ["app:out_1", "app:in_1", "recd:app-1-play_1", "recd:app-1-capture_1"]
        return rules
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var rules: ConnectionRules
        var actual: Set<JackConnection>
        var leftAlone: Set<JackConnection> = []
        var disconnect: [JackConnection]
        var connect: [JackConnection]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "nothing there: every wanted edge is made", rules: keeping, actual: [], disconnect: [],
            connect: [keep, keepIn]),
        Case(name: "all there: nothing to do", rules: keeping, actual: [keep, keepIn], disconnect: [], connect: []),
        Case(
            name: "a user's extra connection of a group port is left as it is", rules: keeping,
            actual: [keep, keepIn, userExtra], disconnect: [], connect: []),
        Case(
            name: "JACK said removed though the graph still shows it: made again without asking",
            rules: {
                var rules = keeping
                rules.removedByOthers = [keep]
                return rules
            }(), actual: [keep, keepIn], disconnect: [], connect: [keep]),
        Case(
            name: "removed by others but no rule wants it (a bypass recd cut): not made",
            rules: {
                var rules = attached
                rules.removedByOthers = [bypass]
                return rules
            }(), actual: [keep, keepIn, appToRecd, recdToApp], disconnect: [], connect: []),
        Case(
            name: "attachment: its edges made, the app's auto-connect cut", rules: attached,
            actual: [keep, keepIn, bypass, micBypass], disconnect: [bypass, micBypass],
            connect: [appToRecd, recdToApp]),
        Case(
            name: "recd's attachment port connected elsewhere: cut", rules: attached,
            actual: [keep, keepIn, appToRecd, recdToApp, edge("recd:app-1-capture_1", "other:in_1")],
            disconnect: [edge("recd:app-1-capture_1", "other:in_1")], connect: []),
        Case(
            name: "conflict: a group wants an attached port; the attachment wins (forbidden beats wanted)",
            rules: {
                var rules = attached
                rules.wanted[edge("recd:line_1", "app:in_1")] = .group("line")
                rules.watched["recd:line_1"] = .output
                return rules
            }(), actual: [keep, keepIn, appToRecd, recdToApp, edge("recd:line_1", "app:in_1")],
            disconnect: [edge("recd:line_1", "app:in_1")], connect: []),
        Case(
            name: "an ended attachment's edges are cut once",
            rules: {
                var rules = keeping
                rules.forbidden = [appToRecd]
                return rules
            }(), actual: [keep, keepIn, appToRecd], disconnect: [appToRecd], connect: []),
        Case(
            name: "left alone: neither made nor cut", rules: attached, actual: [keepIn, bypass, appToRecd, recdToApp],
            leftAlone: [keep, bypass], disconnect: [], connect: []),
    ]

    @Test(arguments: cases)
    func plan(_ test: Case) {
        let plan = ConnectionReconciler.plan(test.rules, actual: test.actual, leftAlone: test.leftAlone)
        #expect(plan.disconnect == test.disconnect)
        #expect(plan.connect == test.connect)
    }

    @Test("an attachment's ports, the app's and recd's, are held from every group")
    func heldPorts() {
        let handle = AttachmentHandle(
            clientName: "app", playPorts: ["app:out_1"], recdPlayPorts: [.init(port: nil, name: "recd:app-1-play_1")],
            capturePorts: ["app:in_1"], recdCapturePorts: [.init(port: nil, name: "recd:app-1-capture_1")],
            player: nil, release: nil)
        #expect(
            ConnectionReconciler.heldPorts([handle])
                == ["app:out_1", "app:in_1", "recd:app-1-play_1", "recd:app-1-capture_1"])
    }

    /// Each step: time, whether recd needs to change the edge then, and whether it may.
    @Test(
        "churn: three changes within a second are made, a fourth need leaves the edge alone, reported once",
        arguments: [
            // A careful operator: removed twice, then again a second later: always repaired.
            ([0.0, 0.3, 0.6, 1.7, 2.0], [true, true, true, true, true]),
            // A loop every 50 ms: the fourth need within the second is refused.
            ([0.0, 0.05, 0.1, 0.15, 0.2], [true, true, true, false, false]),
            // Spread just over the window: never a fight.
            ([0.0, 0.5, 1.01, 1.52, 2.03], [true, true, true, true, true]),
        ])
    func churn(times: [Double], allowed: [Bool]) {
        var tracker = ChurnTracker(retrySeconds: 30)
        let edge = Self.keep
        var decided: [Bool] = []
        var leftAloneReports = 0
        for now in times {
            if tracker.leftAloneEdges(now: now).contains(edge) {
                decided.append(false)
                continue
            }
            switch tracker.mayChange(edge, recdWantsIt: true, now: now) {
            case .change: decided.append(true)
            case .leaveAlone(let entry):
                leftAloneReports += 1
                #expect(entry.changes == 3 && entry.recdWantedIt && entry.edge == edge)
                decided.append(false)
            }
        }
        #expect(decided == allowed)
        #expect(leftAloneReports == (allowed.contains(false) ? 1 : 0), "reported once")
    }

    @Test("a left-alone edge is tried again after the retry time, or when one of its ports registers again")
    func retry() {
        var tracker = ChurnTracker(retrySeconds: 30)
        let edge = Self.keep
        for now in [0.0, 0.1, 0.2] { #expect(tracker.mayChange(edge, recdWantsIt: true, now: now) == .change) }
        guard case .leaveAlone = tracker.mayChange(edge, recdWantsIt: true, now: 0.3) else {
            Issue.record("the fourth change within a second must leave the edge alone")
            return
        }
        #expect(tracker.leftAloneEdges(now: 29) == [edge])
        #expect(tracker.leftAloneEdges(now: 30.4).isEmpty, "retried after 30 s")
        #expect(tracker.mayChange(edge, recdWantsIt: true, now: 30.4) == .change)

        for now in [40.0, 40.1, 40.2] { _ = tracker.mayChange(edge, recdWantsIt: true, now: now) }
        _ = tracker.mayChange(edge, recdWantsIt: true, now: 40.3)
        tracker.forgive(ports: ["system:capture_9"])
        #expect(tracker.leftAloneEdges(now: 41) == [edge], "another port's registration changes nothing")
        tracker.forgive(ports: ["system:playback_1"])
        #expect(tracker.leftAloneEdges(now: 41).isEmpty, "its device came back: tried again")
        #expect(tracker.mayChange(edge, recdWantsIt: true, now: 41) == .change)
    }

    @Test("a change taken back (JACK said already connected) does not count")
    func uncount() {
        var tracker = ChurnTracker(retrySeconds: 30)
        let edge = Self.keep
        for now in [0.0, 0.1, 0.2, 0.3, 0.4] {
            #expect(tracker.mayChange(edge, recdWantsIt: true, now: now) == .change)
            if now != 0.2 { tracker.uncount(edge) }
        }
        #expect(tracker.leftAloneEdges(now: 0.5).isEmpty, "one real change in the second")
    }
}
