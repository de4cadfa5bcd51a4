import AirPlayTesting
import Foundation
import Testing

/// A receiver that keeps its own PTP clock, as a standalone HomePod on OS 27 does: `airplay`
/// follows that clock instead of serving ours, and serves the rest of the group the receiver's
/// time. The receiver's clock here is linuxptp's `ptp4l` on the receiver's host, a grandmaster
/// with priority1 248 (a HomePod's) that no sender here can out-rank into following: the
/// sender hears it on the link, and the room's airplayd hears it over a veth pair inside the
/// room's namespace (ptp4l sends its multicast with loopback off), from the room's own address.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ReceiverClockTests {
    /// Room 1's clock: ptp4l with one port on the sender's link and one on an inner veth pair,
    /// both sending from 10.94.1.2; what crosses the inner pair is taken as local traffic.
    static func receiversOwnClock(in room: TestHost) throws -> ManagedProcess {
        let ip = try #require(TestHost.which("ip"))
        let addresses = try room.run(ip, ["-o", "-4", "addr", "show"], timeout: 10).stdout
        let outer = try #require(addresses.split(separator: "\n").first { $0.contains("10.94.1.2/24") }?.split(separator: " ")[1],
                                 "room 1's link: \(addresses)")
        for arguments in [["link", "add", "clockA", "type", "veth", "peer", "name", "clockB"],
                          ["addr", "add", "10.94.1.2/32", "dev", "clockA", "noprefixroute"],
                          ["addr", "add", "10.95.1.2/32", "dev", "clockB", "noprefixroute"],
                          ["link", "set", "clockA", "up"], ["link", "set", "clockB", "up"]] {
            let result = try room.run(ip, arguments, timeout: 10)
            guard result.status == 0 else { throw TestHostError("ip \(arguments.joined(separator: " ")): \(result.stderr)") }
        }
        let sysctl = try #require(TestHost.which("sysctl"))
        let result = try room.run(sysctl, ["-qw", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.clockB.rp_filter=0",
                                           "net.ipv4.conf.all.accept_local=1", "net.ipv4.conf.clockB.accept_local=1"], timeout: 10)
        guard result.status == 0 else { throw TestHostError("sysctl: \(result.stderr)") }
        let config = room.directory + "/homepod-clock.cfg"
        try """
            [global]
            priority1 248
            logAnnounceInterval -2
            logSyncInterval -3
            announceReceiptTimeout 2
            transportSpecific 0x1
            time_stamping software
            """.write(toFile: config, atomically: true, encoding: .utf8)
        return try room.spawn(try #require(TestHost.which("ptp4l"), "ptp4l (linuxptp) is not installed: run tools/setup-deps --test"),
                              ["-i", String(outer), "-i", "clockA", "-f", config, "-m"], label: "ptp4l-homepod")
    }

    /// `airplay stream --timing follow`, buffered (SETRATEANCHORTIME) and realtime (0xD7
    /// anchors), to room 1, whose own clock is ptp4l, and room 2, an airplayd that follows
    /// whatever the sender serves. The sender serves room 1 nothing (ptp4l never hears a
    /// foreign master), follows its clock, anchors room 1 on that clock's identity, and serves
    /// room 2 that same time under our identity: the two rooms play the same samples, every
    /// second within a millisecond of each other.
    @Test(arguments: ["buffered", "realtime"])
    func aReceiverKeepingItsOwnClockIsFollowedAndTheGroupPlaysOnIt(mode: String) throws {
        let sweep = try #require(RAOPInteropTests.sweep)
        let group = try BufferedAudioTests.Group(label: "own-clock-\(mode.prefix(4))", count: 2, fifos: true)
        let clock = try Self.receiversOwnClock(in: group.receivers[0])
        defer { clock.stop() }
        let reader = try group.read(with: "fifo_clock", seconds: 60)
        try group.start()
        // ptp4l takes mastership after 2 s of silence; room 1's airplayd then follows it.
        #expect(group.daemons[0].process.waitForOutput("PTP: following a master ptp.address=10.94.1.2", timeout: 15),
                "\(group.daemons[0].process.stderr.suffix(2000))\(clock.stdout.suffix(1000))")
        let result = try group.stream(sweep.directory + "/sweep.flac", mode: mode,
                                      extra: ["--timing", "follow"] + (mode == "realtime" ? ["--protocol", "2"] : []))
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains(mode == "realtime" ? "AirPlay 2 on PTP, on its own clock" : "AirPlay 2 buffered, on its own clock"),
                "\(result.stdout)")
        #expect(result.stdout.contains("\"ptpClock\":\"receiver\"") && result.stdout.contains("\"ptpClock\":\"sender\""), "\(result.stdout)")
        if mode == "buffered" { #expect(result.stdout.contains("\"ptpClockOwner\":\"receiver\""), "the timeline is the receiver's: \(result.stdout)") }
        for daemon in group.daemons { daemon.process.stop(grace: 2) }
        let report = try FifoClockReport(reader)

        let identity = try #require(clock.stdout.split(separator: "\n").first { $0.contains("selected local clock") }?
            .split(separator: " ").dropFirst(4).first.map { $0.replacingOccurrences(of: ".", with: "") }, "\(clock.stdout)")
        let room1 = group.daemons[0].process.stderr, room2 = group.daemons[1].process.stderr
        #expect(room1.contains("timeline=\(identity.drop { $0 == "0" })"), "room 1 anchored on ptp4l's clock \(identity): \(room1.suffix(3000))")
        #expect(!room1.contains("ptp.address=10.94.1.1"), "room 1 was never served our clock")
        #expect(room2.contains("PTP: following a master ptp.address=10.94.2.1"), "room 2 follows the sender: \(room2.suffix(2000))")
        #expect(!clock.stdout.contains("new foreign master"), "the sender offered ptp4l no clock: \(clock.stdout.suffix(2000))")
        #expect(inStep(report.skews), "\(report.line)")
        #expect(report.sameSamples)
        print("measure: \(mode) on a receiver's own PTP clock (ptp4l, priority1 248), followed; its room and one served that time, largest skew per second \(report.skews) ms")
    }
}
