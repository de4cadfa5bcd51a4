@testable import AirPlayDaemon
import AirPlayReceiver
import AirPlayWire
import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing

/// The device id is stable: read back, else the first hardware MAC, else random and kept.
@Suite struct DeviceIdentityTests {
    private func temporaryDirectory() -> String {
        let path = NSTemporaryDirectory() + "airplayd-test-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func makeInterface(_ root: String, _ name: String, mac: String, hardware: Bool) throws {
        let path = root + "/" + name
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try (mac + "\n").write(toFile: path + "/address", atomically: true, encoding: .utf8)
        if hardware { try FileManager.default.createDirectory(atPath: path + "/device", withIntermediateDirectories: true) }
    }

    @Test func firstStartTakesTheFirstHardwareMACThenKeepsIt() throws {
        let sys = temporaryDirectory()
        try makeInterface(sys, "lo", mac: "00:00:00:00:00:00", hardware: false)
        try makeInterface(sys, "docker0", mac: "02:42:aa:bb:cc:dd", hardware: false)
        try makeInterface(sys, "wlan0", mac: "58:55:ca:1a:e2:88", hardware: true)
        try makeInterface(sys, "eth0", mac: "00:11:22:33:44:55", hardware: true)
        let state = temporaryDirectory() + "/state"
        let store = DeviceIdentityStore(directory: state, interfacesRoot: sys)
        let first = try store.loadOrCreate()
        #expect(first.id.colonForm == "00:11:22:33:44:55")
        #expect(first.source == .interfaceMAC)
        // A new NIC later does not change the identity.
        try makeInterface(sys, "eno1", mac: "aa:aa:aa:aa:aa:aa", hardware: true)
        let second = try store.loadOrCreate()
        #expect(second.id == first.id)
        #expect(second.source == .stored)
    }

    @Test func withoutHardwareARandomLocallyAdministeredIDIsKept() throws {
        let sys = temporaryDirectory()
        try makeInterface(sys, "veth0", mac: "02:42:aa:bb:cc:dd", hardware: false)
        let store = DeviceIdentityStore(directory: temporaryDirectory(), interfacesRoot: sys)
        let first = try store.loadOrCreate()
        #expect(first.source == .generated)
        #expect(first.id.bytes[0] & 0x02 == 0x02, "locally administered")
        #expect(first.id.bytes[0] & 0x01 == 0, "unicast")
        #expect(try store.loadOrCreate().id == first.id)
    }

    @Test func unwritableStateDirectoryIsAnError() {
        let store = DeviceIdentityStore(directory: "/proc/airplayd-cannot-exist", interfacesRoot: "/nonexistent")
        #expect(throws: (any Error).self) { try store.loadOrCreate() }
    }
}

/// Logs: one line per event; priority prefixes for the journal.
@Suite struct LogHandlerTests {
    final class Lines: Sendable {
        let box = NIOLockedValueBox<[String]>([])
        var all: [String] { box.withLockedValue { $0 } }
    }

    @Test func journalLinesCarryThePriorityAndNoTimestamp() {
        let lines = Lines()
        var handler = JournalAwareLogHandler(label: "airplayd", level: .info, journal: true) { text in
            lines.box.withLockedValue { $0.append(text) }
        }
        handler[metadataKey: "peer"] = "192.0.2.1:5000"
        var logger = Logger(label: "airplayd") { _ in handler }
        logger.logLevel = .info
        logger.warning("two\nlines", metadata: ["reason": "a b"])
        logger.debug("hidden")
        #expect(lines.all == ["<4>two\\nlines peer=192.0.2.1:5000 reason=\"a b\"\n"])
    }

    @Test func consoleLinesCarryTimeAndLevel() {
        let lines = Lines()
        let logger = Logger(label: "airplayd") { label in
            JournalAwareLogHandler(label: label, level: .info, journal: false) { text in lines.box.withLockedValue { $0.append(text) } }
        }
        logger.error("boom")
        let line = lines.all.first ?? ""
        #expect(line.hasSuffix(" ERROR airplayd: boom\n"))
        #expect(line.first?.isNumber == true)
    }

    @Test func priorities() {
        #expect(JournalAwareLogHandler.syslogPriority(.critical) == 2)
        #expect(JournalAwareLogHandler.syslogPriority(.error) == 3)
        #expect(JournalAwareLogHandler.syslogPriority(.info) == 6)
        #expect(JournalAwareLogHandler.syslogPriority(.debug) == 7)
    }
}

/// sd_notify datagrams reach the socket systemd names.
@Suite struct SystemdNotifierTests {
    @Test func readyReachesTheNotifySocket() throws {
        let path = NSTemporaryDirectory() + "notify-\(UUID().uuidString.prefix(8)).sock"
        let receiver = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(receiver); unlink(path) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(receiver, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": path])
        #expect(notifier.isActive)
        notifier.ready(status: "Serving")
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = recv(receiver, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        #expect(count > 0)
        #expect(String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self) == "READY=1\nSTATUS=Serving")
    }

    @Test func watchdogIntervalIsHalfOfWatchdogUSec() {
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000"]) == .seconds(15))
        #expect(SystemdNotifier.watchdogInterval(environment: [:]) == nil)
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "1000", "WATCHDOG_PID": "1"]) == nil)
        #expect(!SystemdNotifier(environment: [:]).isActive)
    }
}
