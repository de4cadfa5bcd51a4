import AirPlayWire
import Testing

/// The remote commands a receiver sends its AirPlay 2 sender on the event channel
/// (`POST /command`, `sendMediaRemoteCommand`). `Protocol/airplay2.md` §11.
@Suite struct MediaRemoteCommandTests {
    /// Both generations of readers find their key: the four letters (OwnTone, Music Assistant)
    /// and MediaRemote's number as a string (iOS), as Apple TVs and HomePods send them.
    @Test func nextCarriesTheFourLettersAndMediaRemotesNumber() {
        let plist = MediaRemoteCommand.nextItem.plist(commandID: "5A1C3E5F-0000-4000-8000-000000000001")
        #expect(plist["type"]?.stringValue == "sendMediaRemoteCommand")
        #expect(plist["value"]?.stringValue == "nitm")
        #expect(plist["modernMediaRemoteCommand"]?.stringValue == "4")
        #expect(plist["params"]?["kMRMediaRemoteOptionCommandID"]?.stringValue == "5A1C3E5F-0000-4000-8000-000000000001")
        #expect(plist["params"]?["kMRMediaRemoteOptionSendOptionsNumber"]?.integerValue == 0)
        #expect(plist["params"]?["kMRMediaRemoteOptionIsRedirectingCommand"]?.boolValue == true)
    }

    @Test(arguments: [(MediaRemoteCommand.play, "play", "0"), (.pause, "paus", "1"), (.playPause, "plps", "2"), (.stop, "stop", "3"),
                      (.nextItem, "nitm", "4"), (.previousItem, "pitm", "5")])
    func everyCommandReadsBackAsItself(command: MediaRemoteCommand, letters: String, number: String) {
        let plist = command.plist(commandID: "id")
        #expect(plist["value"]?.stringValue == letters && plist["modernMediaRemoteCommand"]?.stringValue == number)
        #expect(MediaRemoteCommand(plist: plist) == command)
    }

    /// OwnTone's reader needs only `type` and `value`; an iPhone-style sender may send only
    /// the number, as a string or an integer. The number wins when both are there.
    @Test func eitherKeyAloneIsRead() {
        #expect(MediaRemoteCommand(plist: .dictionary(["type": .string("sendMediaRemoteCommand"), "value": .string("paus")])) == .pause)
        #expect(MediaRemoteCommand(plist: .dictionary(["type": .string("sendMediaRemoteCommand"), "modernMediaRemoteCommand": .string("5")])) == .previousItem)
        #expect(MediaRemoteCommand(plist: .dictionary(["type": .string("sendMediaRemoteCommand"), "modernMediaRemoteCommand": .integer(3)])) == .stop)
        #expect(MediaRemoteCommand(plist: .dictionary(["type": .string("sendMediaRemoteCommand"), "value": .string("paus"),
                                                       "modernMediaRemoteCommand": .string("0")])) == .play)
    }

    /// Other `POST /command` plists, and commands nobody here knows, are not commands.
    @Test func otherTypesAndUnknownValuesAreNotCommands() {
        #expect(MediaRemoteCommand(plist: .dictionary(["type": .string("updateInfo")])) == nil)
        #expect(MediaRemoteCommand(plist: .dictionary(["type": .string("updateMRSupportedCommands"), "value": .string("play")])) == nil)
        #expect(MediaRemoteCommand(plist: .dictionary(["type": .string("sendMediaRemoteCommand"), "value": .string("zzzz")])) == nil)
        #expect(MediaRemoteCommand(plist: .dictionary(["type": .string("sendMediaRemoteCommand"), "modernMediaRemoteCommand": .string("99")])) == nil)
        #expect(MediaRemoteCommand(plist: .dictionary(["type": .string("sendMediaRemoteCommand"), "value": .integer(1)])) == nil)
        #expect(MediaRemoteCommand(plist: .string("sendMediaRemoteCommand")) == nil)
    }

    /// The volume is `dvlc` with a unit volume, linear in AirPlay dB (dB / 30 + 1), at the top
    /// and in `params`; out of range it is clamped, and a NaN is refused.
    @Test func theVolumeIsAUnitVolumeLinearInDecibels() {
        let plist = MediaRemoteCommand.setVolume(0.5).plist(commandID: "id")
        #expect(plist["value"]?.stringValue == "dvlc" && plist["volume"]?.doubleValue == 0.5 && plist["params"]?["volume"]?.doubleValue == 0.5)
        #expect(plist["modernMediaRemoteCommand"] == nil)
        #expect(MediaRemoteCommand(plist: plist) == .setVolume(0.5))
        #expect(AirPlayVolume.linear(decibels: -15) == 0.5)
        #expect(AirPlayVolume.linear(decibels: -144) == 0 && AirPlayVolume.linear(decibels: 0) == 1)
        #expect(AirPlayVolume.decibels(linear: 0.5) == -15 && AirPlayVolume.decibels(linear: 0) == -144)
        let loud = PropertyList.dictionary(["type": .string("sendMediaRemoteCommand"), "value": .string("dvlc"), "params": .dictionary(["volume": .real(7)])])
        #expect(MediaRemoteCommand(plist: loud) == .setVolume(1))
        let broken = PropertyList.dictionary(["type": .string("sendMediaRemoteCommand"), "value": .string("dvlc"), "volume": .real(.nan)])
        #expect(MediaRemoteCommand(plist: broken) == nil)
    }
}
