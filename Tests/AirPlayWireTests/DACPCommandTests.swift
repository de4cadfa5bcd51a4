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
