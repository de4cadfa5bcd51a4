import AirPlayTiming
import ArgumentParser
import Glibc
import Logging

/// `airplay ptp-master --to ADDRESS…`: serves this host's clock as a PTP grandmaster to the
/// given receivers, the timeline `airplay stream --mode buffered` anchors its audio on. Alone it
/// lets a box's PTP follower (`GET /ptp` on the box) or linuxptp's ptp4l be checked against us.
struct PTPMasterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ptp-master",
        abstract: "Serve this host's clock to receivers as a PTP grandmaster (UDP 319/320: needs root or CAP_NET_BIND_SERVICE).")

    @Option(name: .long, help: "A follower's IPv4 address; repeat for several.")
    var to: [String] = []

    @Option(name: .long, help: "Stop after this many seconds (default: run until interrupted).")
    var seconds: Double?

    @Option(name: .long, help: "Announced priority1 (lower wins; default 128).")
    var priority1: UInt8 = 128

    func validate() throws {
        guard !to.isEmpty else { throw ValidationError("name at least one follower with --to ADDRESS") }
    }

    func run() throws {
        let logger = Logger(label: "airplay")
        let identity = PTPGrandmaster.randomClockIdentity()
        let master: PTPGrandmaster
        do {
            master = try PTPGrandmaster(clockIdentity: identity, priority1: priority1, logger: logger)
        } catch {
            print("airplay: \(error)")
            throw ExitCode(77)
        }
        for address in to { master.addFollower(address) }
        print("serving PTP as \(master.identity) to \(to.joined(separator: ", "))")
        fflush(nil)
        let deadline = seconds.map { PTPSockets.monotonicNanoseconds() + Int64($0 * 1e9) }
        while deadline.map({ PTPSockets.monotonicNanoseconds() < $0 }) ?? true {
            usleep(100_000)
        }
        master.stop()
        usleep(50_000)
    }
}
