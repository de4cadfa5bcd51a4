import AirPlayWire
import Testing

/// DACP command paths as receivers send them and senders read them.
@Suite struct DACPCommandTests {
    @Test func commandsRoundTripThroughTheirPaths() {
        let commands: [DACPCommand] = [.play, .pause, .playPause, .stop, .nextItem, .previousItem, .volumeUp, .volumeDown,
                                       .setDeviceVolume(-15.5), .getProperty("dmcp.volume")]
        for command in commands { #expect(DACPCommand(path: command.path) == command, "\(command.path)") }
        #expect(DACPCommand.pause.path == "/ctrl-int/1/pause")
        #expect(DACPCommand.setDeviceVolume(-15).path == "/ctrl-int/1/setproperty?dmcp.device-volume=-15.000000")
    }

    @Test func whatShairportSyncSendsIsRead() {
        #expect(DACPCommand(path: "/ctrl-int/1/playresume") == .play)
        #expect(DACPCommand(path: "/ctrl-int/1/getproperty?properties=dmcp.volume") == .getProperty("dmcp.volume"))
        #expect(DACPCommand(path: "/ctrl-int/1/setproperty?dmcp.device-volume=-144.000000") == .setDeviceVolume(-144))
    }

    /// A volume is read to the micro-decibel, as it is written back, and anything below -144
    /// (muted) is -144: every command read writes the path that reads as it (found by the
    /// remote-command fuzz target: -27777777.7770707 wrote back as ...777071).
    @Test func aVolumeReadsBackAsItIsWritten() {
        let odd = DACPCommand(path: "/ctrl-int/1/setproperty?dmcp.device-volume=-27777777.777070700")
        #expect(odd == .setDeviceVolume(-144))
        let fine = DACPCommand(path: "/ctrl-int/1/setproperty?dmcp.device-volume=-15.1234567")
        #expect(fine == .setDeviceVolume(-15.123457))
        for command in [odd, fine].compactMap({ $0 }) { #expect(DACPCommand(path: command.path) == command) }
    }

    @Test func anythingElseIsNotACommand() {
        for path in ["/ctrl-int/1/", "/ctrl-int/1/rm", "/ctrl-int/2/pause", "/pause", "/ctrl-int/1/setproperty?dmcp.device-volume=5",
                     "/ctrl-int/1/setproperty?dmcp.device-volume=nan", "/ctrl-int/1/setproperty?dacp.shufflestate=1"] {
            #expect(DACPCommand(path: path) == nil, "\(path)")
        }
    }

    @Test func theServiceIsFoundByItsDACPID() {
        #expect(DACPCommand.serviceName(dacpID: "00A1B2") == "iTunes_Ctrl_00A1B2")
        #expect(DACPCommand.serviceMatches("iTunes_Ctrl_00A1B2", dacpID: "a1b2"))
        #expect(!DACPCommand.serviceMatches("iTunes_Ctrl_A1B3", dacpID: "A1B2"))
        #expect(!DACPCommand.serviceMatches("A1B2", dacpID: "A1B2"))
    }
}
