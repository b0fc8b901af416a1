import AudioEngine
import Foundation

extension AudioEngine {
    /// `beginAttach`, then the handle once the connection thread has registered recd's ports
    /// for it (polling `finishedAttachments`, as recd does when the engine wakes it).
    func attachAndWait(
        client: String, playPorts: [String], capturePorts: [String], outputGroup: String?, seconds: Double = 5
    ) throws -> AttachmentHandle {
        let ticket = try beginAttach(
            client: client, playPorts: playPorts, capturePorts: capturePorts, outputGroup: outputGroup)
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let (_, result) = finishedAttachments().first(where: { $0.0 == ticket }) { return try result.get() }
            usleep(1_000)
        }
        throw AudioEngineError.invalidArgument("attach of \(client) not finished within \(seconds) s")
    }
}
