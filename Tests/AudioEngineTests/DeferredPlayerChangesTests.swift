// A player's move waits for the connection reconciler's answer (its new group's edges made),
// and the player's later changes wait behind it, in order; other players are not held up.
// Pure: no JACK (the answers are given by hand, as the worker thread gives them).
import Testing

@testable import AudioEngine

@Suite("player changes behind a move that waits for the reconciler")
struct DeferredPlayerChangesTests {
    static func player() -> PlayerHandle {
        PlayerHandle(
            outputGroup: "A", channels: 1, capacityFrames: 16,
            routes: PlayerRoute.defaultRoutes(playerChannels: 1, groupChannels: 1),
            flatOutputBase: 0, initialCommand: PlayerCommand(gain: 1, rampFrames: 0, paused: true))
    }

    @Test("a play given while the move waits comes after the move; another player's change goes at once")
    func inOrder() {
        let changes = DeferredPlayerChanges()
        let (moving, other) = (Self.player(), Self.player())
        var log: [String] = []
        let request = changes.waitForAnswer(moving) { log.append("move") }
        changes.apply(moving) { log.append("play") }
        changes.apply(other) { log.append("other") }
        changes.applyAnswered()
        #expect(log == ["other"], "nothing of the moving player before the answer")
        changes.answers.answer(request)
        changes.applyAnswered()
        #expect(log == ["other", "move", "play"])
        changes.apply(moving) { log.append("pause") }
        #expect(log.last == "pause", "with nothing waiting, a change goes at once")
    }

    @Test("two moves answered out of turn are applied in the order they were made; a removed player's are dropped")
    func twoMoves() {
        let changes = DeferredPlayerChanges()
        let (first, gone) = (Self.player(), Self.player())
        var log: [String] = []
        let toB = changes.waitForAnswer(first) { log.append("B") }
        let toC = changes.waitForAnswer(first) { log.append("C") }
        let dropped = changes.waitForAnswer(gone) { log.append("gone") }
        changes.answers.answer(toC)
        changes.applyAnswered()
        #expect(log.isEmpty, "C waits for B")
        changes.forget(gone)
        changes.answers.answer(dropped)
        changes.answers.answer(toB)
        changes.applyAnswered()
        #expect(log == ["B", "C"])
        changes.apply(first) { log.append("play") }
        #expect(log == ["B", "C", "play"])
    }
}
