import AirPlayTesting
import Foundation
import Testing

/// Tones with titles, for streams whose items a remote control moves through.
func makeTitledTones(in directory: String, titles: [String], seconds: Int = 8) throws -> [String] {
    let ffmpeg = try #require(TestHost.which("ffmpeg"))
    return try titles.enumerated().map { index, title in
        let path = directory + "/tone-\(index).flac"
        let result = try runCommand(ffmpeg, ["-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=f=\(330 + 110 * index):d=\(seconds)",
                                             "-ac", "2", "-ar", "44100", "-metadata", "title=\(title)", "-metadata", "artist=Remote Band", path],
                                     timeout: 30)
        guard result.status == 0 else { throw TestHostError("ffmpeg: \(result.stderr)") }
        return path
    }
}

/// The box's remote control, both ways: airplayd sending to `airplay stream` over DACP and on
/// the AirPlay 2 event channel, and shairport-sync (a DACP client nobody here wrote) sending to it.
@Suite(.serialized, .timeLimit(.minutes(10))) struct RemoteControlInteropTests {
    /// `POST /now-playing/remote` on the box, from inside the host: the status line.
    /// (The connection stays open for writing until the answer comes: the DACP round trip to the
    /// sender takes a moment, and a half-closed connection is closed by the server.)
    func remote(_ host: TestHost, port: Int, _ command: String) throws -> String {
        let script = """
            import socket, sys
            s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
            s.sendall(f"POST /now-playing/remote?command={sys.argv[2]} HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 0\\r\\n\\r\\n".encode())
            out = b""
            while b"\\r\\n" not in out:
                data = s.recv(4096)
                if not data: break
                out += data
            print(out.split(b"\\r\\n")[0].decode("latin-1"))
            """
        return try host.run("/usr/bin/python3", ["-c", script, String(port), command], timeout: 15).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func nowPlaying(_ host: TestHost, port: Int) throws -> [String: Any] {
        let reply = try host.exchange(port: port, ["GET /now-playing HTTP/1.1\r\nHost: x\r\n\r\n"])
        let body = reply.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        return (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]) ?? [:]
    }

    /// The same presses over AirPlay 1 (DACP: the box finds the sender's `_dacp._tcp` service)
    /// and over AirPlay 2 with no DACP served (the event channel).
    @Test(arguments: ["1", "2"]) func theBoxPausesResumesAndSkipsAnAirplayStream(protocolVersion: String) throws {
        let host = try TestHost(label: "dacp\(protocolVersion)")
        defer { host.close() }
        try host.startAvahi()
        let files = try makeTitledTones(in: host.directory, titles: ["First Song", "Second Song"])
        let daemon = try RunningDaemon.start(in: host, port: 7020, extra: ["--audio-output", "fakesink sync=true", "--video", "off"])
        #expect(try remote(host, port: 7020, "pause").hasPrefix("HTTP/1.1 409"), "nothing plays yet")
        let sender = try host.spawn(try Products.executable("airplay"), ["stream"] + files + ["--to", "127.0.0.1:7020", "--json", "--protocol", protocolVersion]
                                    + (protocolVersion == "2" ? ["--no-dacp"] : []), label: "airplay")
        defer { sender.stop() }
        #expect(sender.waitForOutput("\"event\":\"started\"", timeout: 20, inStdout: true), "\(sender.stderr)")
        #expect(poll(timeout: 10) { (try? nowPlaying(host, port: 7020))?["title"] as? String == "First Song" })

        let paused = try remote(host, port: 7020, "pause")
        let remoteLog = daemon.process.stderr.split(separator: "\n").filter { $0.contains("remote") }.joined(separator: "\n")
        #expect(paused == "HTTP/1.1 204 No Content", "\(paused)\n\(remoteLog)")
        #expect(sender.waitForOutput("\"state\":\"paused\"", timeout: 5, inStdout: true), "the sender paused: \(sender.stdout.suffix(600))")
        #expect(poll(timeout: 5) { (try? nowPlaying(host, port: 7020))?["state"] as? String == "paused" },
                "\((try? nowPlaying(host, port: 7020)) ?? [:]) \(daemon.process.stderr.suffix(3000))")
        #expect(try remote(host, port: 7020, "play") == "HTTP/1.1 204 No Content")
        #expect(poll(timeout: 5) { (try? nowPlaying(host, port: 7020))?["state"] as? String == "playing" })

        #expect(try remote(host, port: 7020, "next") == "HTTP/1.1 204 No Content")
        #expect(sender.waitForOutput("item 2 of 2", timeout: 5, inStdout: true), "\(sender.stdout.suffix(600))")
        #expect(poll(timeout: 5) { (try? nowPlaying(host, port: 7020))?["title"] as? String == "Second Song" })
        #expect(try remote(host, port: 7020, "seek:10").hasPrefix("HTTP/1.1 409"), "no path seeks an audio sender: said, not pretended")
        let path = protocolVersion == "1" ? "path=DACP" : "path=\"event channel\""
        #expect(daemon.process.stderr.contains(path), "\(daemon.process.stderr.suffix(1500))")

        #expect(try remote(host, port: 7020, "stop") == "HTTP/1.1 204 No Content")
        #expect(sender.waitForExit(timeout: 10) == 0, "\(sender.stderr)")
        #expect(sender.stdout.contains("\"quit\":true"))
    }

    /// shairport-sync's own remote control (its D-Bus `RemoteControl.Pause` and `Play`) finds
    /// our stream's DACP service and pauses and resumes it.
    @Test func shairportSyncsRemoteControlPausesAnAirplayStream() throws {
        try TestHost.require(["shairport-sync", "dbus-send"])
        let host = try TestHost(label: "spsdacp")
        defer { host.close() }
        try host.startAvahi()
        let files = try makeTitledTones(in: host.directory, titles: ["Long Song"], seconds: 20)
        let shairport = try host.spawn(try #require(TestHost.which("shairport-sync")),
                                       ["-a", "Shairport Remote", "-p", "5058", "-o", "dummy", "-u", "-vvv"], label: "shairport-sync")
        #expect(try host.waitForService("_raop._tcp") { $0.name.hasSuffix("@Shairport Remote") } != nil, "\(shairport.stderr)")
        let sender = try host.spawn(try Products.executable("airplay"), ["stream", files[0], "--to", "127.0.0.1:5058", "--json"], label: "airplay")
        defer { sender.stop() }
        #expect(sender.waitForOutput("\"event\":\"started\"", timeout: 20, inStdout: true), "\(sender.stderr)")
        let dbus = try #require(TestHost.which("dbus-send"))
        func call(_ method: String) throws -> CommandResult {
            try host.run(dbus, ["--system", "--print-reply", "--dest=org.gnome.ShairportSync", "/org/gnome/ShairportSync",
                                "org.gnome.ShairportSync.RemoteControl.\(method)"], timeout: 10)
        }
        // shairport-sync finds the remote through avahi and polls it about once a second.
        let available = poll(timeout: 15, interval: 0.5) {
            let reply = try? host.run(dbus, ["--system", "--print-reply", "--dest=org.gnome.ShairportSync", "/org/gnome/ShairportSync",
                                             "org.freedesktop.DBus.Properties.Get", "string:org.gnome.ShairportSync.RemoteControl",
                                             "string:Available"], timeout: 5)
            return reply?.stdout.contains("boolean true") == true
        }
        #expect(available, "shairport-sync never reached our remote: \(shairport.stderr.split(separator: "\n").filter { $0.lowercased().contains("dacp") || $0.contains("Scan") }.suffix(30).joined(separator: "\n")) \((try? host.browse("_dacp._tcp")) ?? []) \(sender.stderr)")
        #expect(try call("Pause").status == 0)
        #expect(sender.waitForOutput("\"state\":\"paused\"", timeout: 5, inStdout: true), "\(sender.stdout.suffix(500))\(shairport.stderr.suffix(1500))")
        #expect(try call("Play").status == 0)
        #expect(sender.waitForOutput("\"state\":\"playing\"", timeout: 5, inStdout: true), "\(sender.stdout.suffix(500))")
        sender.signal(SIGTERM)
        #expect(sender.waitForExit(timeout: 10) == 0)
    }
}
