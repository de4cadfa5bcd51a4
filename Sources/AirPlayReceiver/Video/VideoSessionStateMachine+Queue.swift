/// The sender's queue (`playlistInsert`, `playlistRemove`, `actionAtItemEnd`): an iPhone queues
/// the next item of a playlist while one plays; when the playing item ends, the next one plays
/// in the same session, and the sender hears `loading`, `playing` for it rather than `stopped`.
extension VideoSessionStateMachine {
    /// `actionAtItemEnd`'s values (AVPlayer's).
    enum ItemEnd: Int, Hashable, Sendable {
        /// 0: the next queued item plays.
        case advance = 0
        /// 1: the player pauses at the end.
        case pause = 1
        /// 2: nothing happens.
        case none = 2
    }

    /// Items a sender may queue.
    static let maximumQueue = 16

    /// `playlistInsert`: `item` is played after the current one (and those queued before it). A
    /// queue belongs to one session: another session's insert starts a queue of its own.
    mutating func insertItem(_ item: PlayRequest, sessionID: String) -> Result<Void, Refusal> {
        guard item.itemID != nil else { return .failure(Refusal(status: 400, reason: "playlistInsert needs the item's uuid")) }
        if queueOwner != sessionID { (queue, queueOwner) = ([], sessionID) }
        guard queue.count < Self.maximumQueue else {
            return .failure(Refusal(status: 400, reason: "the queue holds at most \(Self.maximumQueue) items"))
        }
        queue.removeAll { $0.itemID == item.itemID }
        queue.append(item)
        return .success(())
    }

    /// `setProperty?actionAtItemEnd` with `{value: 0 | 1 | 2}`; other values change nothing.
    mutating func setItemEnd(_ value: Int) {
        if let end = ItemEnd(rawValue: value) { itemEnd = end }
    }
}
