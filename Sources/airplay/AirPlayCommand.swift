import AirPlayDiscovery
import AirPlaySender
import AirPlayWire
import ArgumentParser
import Foundation

/// `airplay`: the sender command line.
@main
struct AirPlayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "airplay",
        abstract: "Find AirPlay receivers and send them video and audio.",
        version: SwiftAirPlay.version,
        subcommands: [ListCommand.self, PlayCommand.self, PauseCommand.self, ResumeCommand.self, SeekCommand.self,
                      SkipCommand.self, RateCommand.self, StopCommand.self, StatusCommand.self, EventsCommand.self,
                      VolumeCommand.self, SelectCommand.self, StreamCommand.self, HLSCommand.self, PairCommand.self, UnpairCommand.self,
                      PTPMasterCommand.self, GroupCommand.self, ConformanceCommand.self, DoctorCommand.self])
}

/// `airplay list`: receivers on the network, video-capable first.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List AirPlay receivers found through avahi-daemon, video-capable ones first.")

    @Flag(name: .long, help: "Print a JSON array with the decoded features.")
    var json = false

    @Option(name: .long, help: "Longest time to browse, in seconds (the browse ends earlier once Avahi has answered).")
    var timeout: Double = 5

    func validate() throws {
        guard timeout > 0, timeout <= 120 else { throw ValidationError("--timeout must be between 0 and 120 seconds") }
    }

    func run() throws {
        let receivers: [DiscoveredReceiver]
        do {
            receivers = try ReceiverBrowser.discover(timeoutSeconds: timeout)
        } catch let error as AvahiError where error.isDaemonUnavailable {
            if json { print(jsonLine(["ok": false, "error": "cannot reach avahi-daemon", "kind": "notFound"])) }
            FileHandle.standardError.write(Data("""
                airplay: cannot reach avahi-daemon (\(error)).
                Start it (systemctl start avahi-daemon) or check that the system D-Bus is running.

                """.utf8))
            throw ExitCode(69)  // EX_UNAVAILABLE
        }
        // Receivers this sender holds credentials for show as "paired".
        let paired = Set((try? SenderCredentials())?.receivers.keys.map { $0 } ?? [])
        if json {
            print(ReceiverListing.json(receivers, paired: paired), terminator: "")
        } else if receivers.isEmpty {
            FileHandle.standardError.write(Data("airplay: no receivers found\n".utf8))
        } else {
            print(ReceiverListing.text(receivers, paired: paired), terminator: "")
        }
    }
}
