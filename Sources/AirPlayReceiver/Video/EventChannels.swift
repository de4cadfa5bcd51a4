import AirPlayPlist
import FoundationEssentials
import Glibc
import AirPlayWire
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The reverse (PTTH) event channels senders open with `POST /reverse`, by session id.
///
/// After the 101 upgrade the receiver is the client on that connection: it sends
/// `POST /event` requests carrying a plist (their replies are dropped), and `POST /key`
/// requests for HLS keys under a custom URL scheme, whose replies carry the key.
public final class EventChannels: Sendable {
    private let channels = NIOLockedValueBox<[String: (channel: any Channel, replies: EventChannelReplies?)]>([:])
    private let logger: Logger
    /// How long a sender has to answer a key request.
    static let keyTimeout: TimeAmount = .seconds(10)

    /// A registry.
    public init(logger: Logger) { self.logger = logger }

    /// Adopts an upgraded connection for a session; an older channel of the session is closed.
    func register(sessionID: String, channel: any Channel, replies: EventChannelReplies? = nil) {
        let old = channels.withLockedValue { channels -> (any Channel)? in
            defer { channels[sessionID] = (channel, replies) }
            return channels[sessionID]?.channel
        }
        if let old, old !== channel { old.close(promise: nil) }
        channel.closeFuture.whenComplete { [channels] _ in
            channels.withLockedValue { if $0[sessionID]?.channel === channel { $0[sessionID] = nil } }
        }
    }

    /// Asks the session's sender for an HLS key it can reach and we cannot (a custom-scheme URI):
    /// `POST /key` with a plist `{uri}`; a 200 reply's body is the key. Times out after 10 s.
    public func requestKey(sessionID: String, uri: String) async -> Result<[UInt8], HLSKeyError> {
        guard let (channel, replies) = channels.withLockedValue({ $0[sessionID] }), let replies else {
            return .failure(.init("the sender has no event channel open to ask for the key"))
        }
        let body = PropertyList.dictionary(["uri": .string(uri)]).encoded(as: .xml)
        let promise = channel.eventLoop.makePromise(of: AirPlayResponse.self)
        channel.eventLoop.execute {
            var buffer = channel.allocator.buffer(capacity: body.count + 200)
            buffer.writeString("POST /key HTTP/1.1\r\nContent-Type: text/x-apple-plist+xml\r\n")
            buffer.writeString("Content-Length: \(body.count)\r\nX-Apple-Session-ID: \(sessionID)\r\n\r\n")
            buffer.writeBytes(body)
            replies.expect(promise)
            channel.writeAndFlush(buffer, promise: nil)
        }
        let timeout = channel.eventLoop.scheduleTask(in: Self.keyTimeout) {
            promise.fail(ChannelError.connectTimeout(Self.keyTimeout))
        }
        do {
            let response = try await promise.futureResult.get()
            timeout.cancel()
            guard response.status == 200 else {
                let reason = String(buffer: response.body).trimmingWhitespace()
                return .failure(.init("the sender answered \(response.status)\(reason.isEmpty ? "" : ": \(reason)")"))
            }
            return .success(Array(response.body.readableBytesView))
        } catch ChannelError.connectTimeout {
            return .failure(.init("the sender did not answer the key request within 10 s"))
        } catch {
            return .failure(.init("the sender's event channel closed before it answered"))
        }
    }

    /// True when the session has an open event channel.
    public func has(sessionID: String) -> Bool { channels.withLockedValue { $0[sessionID] != nil } }

    /// Sends `POST /event` with the plist to the session's channel, if it has one (false when not).
    @discardableResult
    public func send(sessionID: String, event: PropertyList) -> Bool {
        guard let (channel, replies) = channels.withLockedValue({ $0[sessionID] }) else { return false }
        let body = event.encoded(as: .xml)
        var buffer = channel.allocator.buffer(capacity: body.count + 200)
        buffer.writeString("POST /event HTTP/1.1\r\nContent-Type: text/x-apple-plist+xml\r\n")
        buffer.writeString("Content-Length: \(body.count)\r\nX-Apple-Session-ID: \(sessionID)\r\n\r\n")
        buffer.writeBytes(body)
        let request = buffer
        channel.eventLoop.execute {
            replies?.expect(nil)
            channel.writeAndFlush(request, promise: nil)
        }
        logger.debug("event sent", metadata: ["session": "\(sessionID)", "event": "\(event["state"]?.stringValue ?? event["type"]?.stringValue ?? "?")"])
        return true
    }

    /// Closes every event channel (shutdown).
    public func closeAll() {
        let all = channels.withLockedValue { channels -> [any Channel] in
            defer { channels = [:] }
            return channels.values.map(\.channel)
        }
        for channel in all { channel.close(promise: nil) }
    }
}
