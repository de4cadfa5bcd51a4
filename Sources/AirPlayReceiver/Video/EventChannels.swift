import AirPlayPlist
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The reverse (PTTH) event channels senders open with `POST /reverse`, by session id.
///
/// After the 101 upgrade the receiver is the client on that connection: it sends
/// `POST /event` requests carrying a plist and ignores the sender's replies.
public final class EventChannels: Sendable {
    private let channels = NIOLockedValueBox<[String: any Channel]>([:])
    private let logger: Logger

    /// A registry.
    public init(logger: Logger) { self.logger = logger }

    /// Adopts an upgraded connection for a session; an older channel of the session is closed.
    public func register(sessionID: String, channel: any Channel) {
        let old = channels.withLockedValue { channels -> (any Channel)? in
            defer { channels[sessionID] = channel }
            return channels[sessionID]
        }
        if let old, old !== channel { old.close(promise: nil) }
        channel.closeFuture.whenComplete { [channels] _ in
            channels.withLockedValue { if $0[sessionID] === channel { $0[sessionID] = nil } }
        }
    }

    /// True when the session has an open event channel.
    public func has(sessionID: String) -> Bool { channels.withLockedValue { $0[sessionID] != nil } }

    /// Sends `POST /event` with the plist to the session's channel, if it has one.
    public func send(sessionID: String, event: PropertyList) {
        guard let channel = channels.withLockedValue({ $0[sessionID] }) else { return }
        let body = event.encoded(as: .xml)
        var buffer = channel.allocator.buffer(capacity: body.count + 200)
        buffer.writeString("POST /event HTTP/1.1\r\nContent-Type: text/x-apple-plist+xml\r\n")
        buffer.writeString("Content-Length: \(body.count)\r\nX-Apple-Session-ID: \(sessionID)\r\n\r\n")
        buffer.writeBytes(body)
        channel.writeAndFlush(buffer, promise: nil)
        logger.debug("event sent", metadata: ["session": "\(sessionID)", "event": "\(event["state"]?.stringValue ?? "?")"])
    }

    /// Closes every event channel (shutdown).
    public func closeAll() {
        let all = channels.withLockedValue { channels -> [any Channel] in
            defer { channels = [:] }
            return Array(channels.values)
        }
        for channel in all { channel.close(promise: nil) }
    }
}
