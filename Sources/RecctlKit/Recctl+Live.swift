// The commands that stay connected: `meter` redrawn live, and `session attach`, which holds
// the connection as long as the attachment lasts.
import ControlClient
import ControlProtocol
import Foundation
import Platform

extension Recctl {
    /// Redraws the meters about ten times a second until interrupted.
    static func liveMeters(_ connection: Connection, _ request: Command, output: Output) throws -> Int32 {
        var drawn = 0
        while true {
            let reply = try connection.call(request)
            if let error = Wire.error(from: reply), reply["ok"]?.boolValue != true {
                output.failure(error)
                return 1
            }
            if output.json {
                print(Output.payload(reply).jsonText)
            } else {
                let meters = try MetersInfo(json: reply)
                let lines = Output.meterBars(meters.meters) + Output.loudnessLines(meters.recordings)
                // Move back over the previous drawing and overwrite it.
                if drawn > 0 { print("\u{1B}[\(drawn)A", terminator: "") }
                for line in lines { print("\u{1B}[2K" + line) }
                drawn = lines.count
            }
            fflush(nil)
            SystemClock.sleep(seconds: 0.1)
        }
    }

    /// `session attach`: watches the app, attaches, then holds the connection (an attachment ends
    /// with the connection that made it) until the attachment ends: 0 when the program's client
    /// went (it exited), 1 for any other end (detached, session deleted, JACK lost), with why.
    static func holdAttachment(_ connection: Connection, _ attach: AttachRequest, output: Output) throws -> Int32 {
        let watching = try connection.call(.watch(app: attach.app))
        if let error = Wire.error(from: watching), watching["ok"]?.boolValue != true {
            output.failure(error)
            return 1
        }
        let reply = try connection.call(.sessionAttach(attach), onEvent: { _ in })
        if let error = Wire.error(from: reply), reply["ok"]?.boolValue != true {
            output.failure(error)
            return 1
        }
        if output.json {
            print(Output.payload(reply).jsonText)
        } else if let info = try? AttachmentInfo(json: reply["attachment"] ?? .null) {
            print("attached: " + Output.attachmentLine(info) + "; held until \(attach.client) exits (Ctrl-C detaches)")
        }
        fflush(nil)
        while true {
            let message = try connection.readMessage(timeout: nil)
            guard message["event"] != nil, let event = try? Event(json: message) else { continue }
            switch event {
            case .attachmentDetached(let app, let client, let reason)
            where app == attach.app && client == attach.client:
                output.event(message)
                return reason == .clientGone ? 0 : 1
            case .mediaServicesWereLost:
                output.event(message)
                return 1
            default:
                continue
            }
        }
    }
}
