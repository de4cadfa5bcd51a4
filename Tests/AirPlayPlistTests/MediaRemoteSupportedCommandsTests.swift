import AirPlayPlist
import AirPlayWire
import Testing

/// `updateMRSupportedCommands`: the remote commands an AirPlay 2 sender takes, as a list of
/// nested binary plists. `Protocol/airplay2.md` §11.
@Suite struct MediaRemoteSupportedCommandsTests {
    static func entry(_ number: Int64, enabled: PropertyList = .bool(true)) -> PropertyList {
        .data(PropertyList.dictionary(["kCommandInfoCommandKey": .integer(number), "kCommandInfoEnabledKey": enabled]).encoded(as: .binary))
    }

    static func body(_ entries: [PropertyList]) -> PropertyList {
        .dictionary(["type": .string("updateMRSupportedCommands"), "params": .dictionary(["mrSupportedCommandsFromSender": .array(entries)])])
    }

    @Test func theEnabledNumbersAreRead() throws {
        let list = try #require(MediaRemoteSupportedCommands(plist: Self.body([Self.entry(0), Self.entry(1), Self.entry(4, enabled: .bool(false)), Self.entry(5)])))
        #expect(list.enabled == [0, 1, 5])
    }

    /// OwnTone sends an empty list first, then its table: an empty list says "nothing". A plist
    /// with no list, or none of whose entries reads, says nothing at all.
    @Test func anEmptyListIsReadAndAMissingOneIsNot() {
        #expect(MediaRemoteSupportedCommands(plist: Self.body([]))?.enabled == [])
        #expect(MediaRemoteSupportedCommands(plist: .dictionary(["type": .string("updateMRSupportedCommands")])) == nil)
        #expect(MediaRemoteSupportedCommands(plist: Self.body([.string("4"), .integer(4)])) == nil)
    }

    /// Written and read back: each entry its own binary plist.
    @Test func itRoundTrips() {
        let list = MediaRemoteSupportedCommands(enabled: [0, 1, 2, 4, 5, 25, 26])
        #expect(MediaRemoteSupportedCommands(plist: list.plist) == list)
    }

    /// Hostile lists: entries that are not nested plists of a number are skipped, a negative or
    /// huge number too, and other `type`s are not this.
    @Test func junkEntriesAreSkipped() {
        let junk: [PropertyList] = [.string("4"), .data([0x62, 0x70, 0x6c, 0x69, 0x73, 0x74]), Self.entry(-1), Self.entry(Int64.max), Self.entry(3)]
        #expect(MediaRemoteSupportedCommands(plist: Self.body(junk))?.enabled == [3])
        #expect(MediaRemoteSupportedCommands(plist: .dictionary(["type": .string("updateInfo")])) == nil)
    }
}
