import AirPlayTesting
import Foundation
import Testing

/// Starts airplayd in a test host and knows its log.
struct RunningDaemon {
    let process: ManagedProcess
    let stateDirectory: String

    /// Starts airplayd in `host` with the given extra flags; waits for `ready` in its log.
    static func start(in host: TestHost, name: String = "Integration Box", port: Int = 7000,
                      extra: [String] = [], stateDirectory: String? = nil,
                      environment: [String: String] = [:], waitForReady: Bool = true) throws -> RunningDaemon {
        let state = stateDirectory ?? (host.directory + "/state-\(UUID().uuidString.prefix(6))")
        let process = try host.spawn(try Products.executable("airplayd"), [
            "--name", name, "--port", String(port), "--state-dir", state, "--log-level", "debug",
        ] + extra, environment: environment, label: "airplayd")
        let daemon = RunningDaemon(process: process, stateDirectory: state)
        if waitForReady {
            guard process.waitForOutput("airplayd: ready", timeout: 20) else {
                throw TestHostError("airplayd did not become ready:\n\(process.stderr)")
            }
        }
        return daemon
    }

    /// The device id the daemon keeps in its state directory.
    var storedDeviceID: String {
        ((try? String(contentsOfFile: stateDirectory + "/device-id", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

extension TestHost {
    /// Applies nftables rules in this namespace, one `nft` call each (a firewall, a lossy link).
    func nft(_ rules: [[String]]) throws {
        let nft = try #require(TestHost.which("nft"), "nftables is a test dependency (tools/setup-deps --test)")
        for rule in rules {
            let result = try run(nft, rule)
            #expect(result.status == 0, "nft \(rule.joined(separator: " ")): \(result.stderr)")
        }
    }

    /// Waits until `avahi-browse` resolves a service of `type` whose name satisfies `matching`.
    func waitForService(_ type: String, timeout: Double = 15,
                        matching: (BrowsedService) -> Bool) throws -> BrowsedService? {
        var found: BrowsedService?
        // Each browse is bounded well inside the wait: one browse stalled on a busy machine
        // (its resolver waiting) must not use up the whole wait.
        let perBrowse = max(2, min(6, timeout / 3))
        poll(timeout: timeout, interval: 0.2) {
            found = (try? browse(type, timeout: perBrowse))?.first(where: matching)
            return found != nil
        }
        return found
    }

    /// One HTTP exchange with a server inside the namespace, through python3 (raw bytes in, raw
    /// bytes out): the chunks `pause` seconds apart, then our side half-closed, then all that comes.
    func exchange(port: Int, _ requests: [String], pause: Double = 0.15, timeout: Double = 10) throws -> String {
        let script = """
            import json, socket, sys, time
            s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
            out = b""
            for chunk in json.load(open(sys.argv[2])):
                s.sendall(chunk.encode("latin-1"))
                time.sleep(float(sys.argv[3]))
            s.shutdown(socket.SHUT_WR)
            try:
                while True:
                    data = s.recv(65536)
                    if not data: break
                    out += data
            except socket.timeout:
                pass
            sys.stdout.write(out.decode("latin-1"))
            """
        // The requests travel in a file: a 1 MiB body does not fit in an argument list.
        let file = directory + "/requests-\(UUID().uuidString.prefix(8)).json"
        try JSONSerialization.data(withJSONObject: requests).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let result = try run("/usr/bin/python3", ["-c", script, String(port), file, String(pause)], timeout: timeout)
        // Nothing at all usually means the daemon died: the script's own error says if it did not.
        return result.stdout.isEmpty ? "(nothing; python: \(result.stderr.suffix(600)))" : result.stdout
    }
}

/// A sender's host and a box's host, each a network namespace of its own, joined by one veth
/// link: the sender at `PREFIX.1`, the box at `PREFIX.2`. `close()` removes both.
struct LinkedHosts {
    let sender: TestHost
    let box: TestHost

    init(label: String, prefix: String) throws {
        sender = try TestHost(label: label + "-sender")
        do {
            box = try TestHost(label: label + "-box")
        } catch {
            sender.close()
            throw error
        }
        do {
            try sender.link(to: box, addresses: [prefix + ".1"], peerAddress: prefix + ".2")
        } catch {
            close()
            throw error
        }
    }

    func close() {
        box.close()
        sender.close()
    }
}

/// Whether rooms played in step, from the per-second skews (ms) a FIFO reader measured: at
/// least `count` seconds, every one within the playout's 2 ms tolerance (a room is not
/// corrected before it is that far off: `PlayoutSchedule.tolerance`, shairport-sync's default
/// too), and the typical second (the median) within 1 ms. A bound of 1 ms on every second failed
/// now and then on a loaded CI machine, with one second at 1.03 ms while the others were at 0.3.
func inStep(_ skews: [Double], atLeast count: Int = 4) -> Bool {
    guard skews.count >= max(count, 1), skews.allSatisfy({ abs($0) <= 2 }) else { return false }
    return skews.map(abs).sorted()[skews.count / 2] <= 1
}

/// What `peers/fifo_clock.py` measured: per second of output, how much later the other
/// receivers played the same frames than the first (ms), and whether all outputs hold the same samples.
struct FifoClockReport {
    let line: String
    let skews: [Double]
    let sameSamples: Bool

    /// Waits for the reader to finish and reads its `OK {json}` line.
    init(_ reader: ManagedProcess) throws {
        #expect(reader.waitForExit(timeout: 45) == 0, "\(reader.stderr)")
        line = try #require(reader.stdout.split(separator: "\n").last.map(String.init))
        let report = try #require(try JSONSerialization.jsonObject(with: Data(line.dropFirst(3).utf8)) as? [String: Any], "\(line)")
        skews = report["skews_ms"] as? [Double] ?? []
        sameSamples = report["same_samples"] as? Bool == true
    }
}
